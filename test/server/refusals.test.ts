// Every refusal as a client receives it over a real socket, with a real client (fetch, undici)
// and with raw bytes: an over-large body answers 413 payload_too_large that a client still
// sending actually reads (and the connection stays usable), requests Node's HTTP parser or
// Node itself would refuse answer the error body with a Request-Id. CI runs this file on every
// supported Node.
import net, { type AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import t, { type Test } from 'tap'
import { request } from 'undici'
import type { App } from '../../app.ts'
import { authHeaders, buildTestApp, createTestDatabase, makeKey } from '../helper.ts'
import { rawRequest, type RawAnswer } from '../raw-http.ts'

const { database } = await createTestDatabase(t)
const MiB = 1024 * 1024
const ORDER = JSON.stringify({ customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: crypto.randomUUID() }] })

async function listening (t: Test, env: Record<string, string> = {}): Promise<{ app: App, port: number, key: string }> {
  const app = await buildTestApp(t, { database, env })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { key } = await makeKey(app, ['orders:create'])
  return { app, port: (app.server.address() as AddressInfo).port, key }
}

interface Refusal { statusCode: number, headers: Record<string, string | string[] | undefined>, body: string }

/** The error body of the contract, its requestId the Request-Id header. */
function refused (t: Test, answer: Refusal, status: number, code: string, what: string): Record<string, unknown> {
  t.equal(answer.statusCode, status, `${what}: status ${status}`)
  t.match(answer.headers['content-type'], /^application\/json/, `${what}: JSON`)
  const body = JSON.parse(answer.body) as Record<string, unknown>
  t.same(Object.keys(body).sort(), ['error', 'message', 'requestId'], `${what}: the error body`)
  t.equal(body.error, code, `${what}: ${code}`)
  t.ok(typeof answer.headers['request-id'] === 'string' && answer.headers['request-id'] !== '', `${what}: a Request-Id header`)
  t.equal(body.requestId, answer.headers['request-id'], `${what}: requestId is the Request-Id header`)
  return body
}

/** A response off a raw socket: status, headers and a Content-Length body, once whole. */
function parsed (bytes: Buffer): Refusal & { rest: Buffer } | null {
  const end = bytes.indexOf('\r\n\r\n')
  if (end < 0) return null
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n')
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  const length = Number(headers['content-length'] ?? 0)
  if (bytes.length < end + 4 + length) return null
  return { statusCode: Number(statusLine.split(' ')[1]), headers, body: bytes.subarray(end + 4, end + 4 + length).toString('utf8'), rest: bytes.subarray(end + 4 + length) }
}

/**
 * A client that goes on sending after the answer came: the head and the first `answeredAfter`
 * bytes of the body, then, once the whole answer has arrived, the rest, then `next` on the same
 * connection. Returns the first answer, the error a write met (EPIPE, ECONNRESET), the answer
 * to `next`.
 */
async function sendPastTheAnswer (port: number, head: string, body: Buffer, next: string, answeredAfter = 64 * 1024): Promise<{ first: Refusal | null, writeError: string | null, second: Refusal | null }> {
  const socket = net.connect(port, '127.0.0.1')
  let received = Buffer.alloc(0)
  let writeError: string | null = null
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', (err: NodeJS.ErrnoException) => { writeError ??= err.code ?? err.message })
  const answered = (count: number) => new Promise<void>((resolve) => {
    const check = () => {
      let rest: Buffer = received
      for (let i = 0; i < count; i++) {
        const answer = parsed(rest)
        if (answer === null) return
        rest = answer.rest
      }
      socket.off('data', onData)
      resolve()
    }
    const onData = (chunk: Buffer) => { received = Buffer.concat([received, chunk]); check() }
    socket.on('data', onData)
    check()
    closed.then(() => { resolve() }, () => {})
  })
  const write = (bytes: Buffer | string) => new Promise<void>((resolve) => {
    if (socket.destroyed) { resolve(); return }
    socket.write(bytes, (err) => { if (err) writeError ??= (err as NodeJS.ErrnoException).code ?? err.message; resolve() })
  })
  await new Promise((resolve) => socket.once('connect', resolve))
  const firstAnswer = answered(1)
  await write(head)
  await write(body.subarray(0, answeredAfter))
  await firstAnswer
  for (let at = answeredAfter; at < body.length; at += 64 * 1024) {
    if (writeError !== null || socket.destroyed) break
    await write(body.subarray(at, at + 64 * 1024))
  }
  const secondAnswer = answered(2)
  if (writeError === null) await write(next)
  await Promise.race([secondAnswer, closed])
  socket.destroy()
  const first = parsed(received)
  return { first, writeError, second: first === null ? null : parsed(first.rest) }
}

t.test('a body over BODY_LIMIT: 413 payload_too_large, read by a client still sending, the connection kept', async (t) => {
  const { port, key } = await listening(t)
  const url = `http://127.0.0.1:${port}/external/v1/orders`
  const headers = { ...authHeaders(key), 'content-type': 'application/json' }
  const twoMiB = Buffer.alloc(2 * MiB, 0x20)

  const viaFetch = await fetch(url, { method: 'POST', headers: { ...headers, 'x-request-id': 'fetch-413' }, body: twoMiB })
  const fetched = refused(t, { statusCode: viaFetch.status, headers: Object.fromEntries(viaFetch.headers), body: await viaFetch.text() }, 413, 'payload_too_large', 'fetch, 2 MiB')
  t.equal(fetched.requestId, 'fetch-413', 'fetch: the client\'s X-Request-Id')

  // A streamed body that is still being sent when the answer comes.
  async function * slowly () {
    for (let sent = 0; sent < 2 * MiB; sent += 64 * 1024) {
      yield twoMiB.subarray(sent, sent + 64 * 1024)
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  const viaUndici = await request(url, { method: 'POST', headers: { ...headers, 'content-length': String(2 * MiB) }, body: Readable.from(slowly()) })
  refused(t, { statusCode: viaUndici.statusCode, headers: viaUndici.headers, body: await viaUndici.body.text() }, 413, 'payload_too_large', 'undici, 2 MiB streamed')

  // Raw bytes: the rest of the body is written after the whole answer has arrived.
  const head = `POST /external/v1/orders HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${twoMiB.length}\r\nX-Request-Id: raw-413\r\n\r\n`
  const raw = await sendPastTheAnswer(port, head, twoMiB, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  t.equal(raw.writeError, null, 'the client writes its whole body: no EPIPE, no reset')
  t.ok(raw.first, 'the answer arrived whole')
  t.equal(refused(t, raw.first!, 413, 'payload_too_large', 'raw, 2 MiB').requestId, 'raw-413')
  t.not(raw.first!.headers.connection, 'close', 'the connection is not closed: the rest of the body is read and dropped')
  t.equal(raw.second?.statusCode, 200, 'the next request on that connection is served')

  // A chunked body says no length: refused when the bytes pass the limit, the same way.
  const chunked = await sendPastTheAnswer(port,
    `POST /external/v1/orders HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    Buffer.concat(Array.from({ length: 32 }, () => Buffer.from(`10000\r\n${' '.repeat(0x10000)}\r\n`)).concat(Buffer.from('0\r\n\r\n'))),
    'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 1.25 * MiB)
  t.equal(chunked.writeError, null, 'chunked: the whole body is written')
  refused(t, chunked.first!, 413, 'payload_too_large', 'raw, 2 MiB chunked')
  t.equal(chunked.second?.statusCode, 200, 'chunked: the connection is kept')

  const fits = await fetch(url, { method: 'POST', headers, body: ORDER })
  t.not(fits.status, 413, 'a body within the limit is not refused for its size')
})

t.test('what is read and dropped is bounded: 16 × BODY_LIMIT, then the connection is closed', async (t) => {
  // BODY_LIMIT 1 KiB: the bound is 16 KiB.
  const { port, key } = await listening(t, { BODY_LIMIT: '1024' })
  const head = (length: string) => `POST /external/v1/orders HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\n${length}\r\n\r\n`

  const within = await sendPastTheAnswer(port, head('Content-Length: 8192'), Buffer.alloc(8192, 0x20), 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  refused(t, within.first!, 413, 'payload_too_large', '8 KiB declared')
  t.equal(within.second?.statusCode, 200, '8 KiB: read and dropped, the connection kept')

  // Declared beyond the bound: answered at once, and the connection closed.
  const declared: RawAnswer = await rawRequest(port, [head('Content-Length: 20000'), ' '.repeat(1000)])
  refused(t, declared, 413, 'payload_too_large', '20,000 bytes declared')
  t.equal(declared.headers.connection, 'close', 'declared beyond the bound: connection: close')
  t.ok(declared.closed, 'and the server closes it')

  // No length declared, and more than the bound sent: cut once past it.
  const endless = await sendPastTheAnswer(port, head('Transfer-Encoding: chunked'),
    Buffer.concat(Array.from({ length: 64 }, () => Buffer.from(`400\r\n${' '.repeat(0x400)}\r\n`))), 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 4096)
  refused(t, endless.first!, 413, 'payload_too_large', '64 KiB chunked')
  t.equal(endless.second, null, 'past the bound no further request is served on that connection')
})

t.test('requests the HTTP parser or Node itself would refuse: the error body and a Request-Id', async (t) => {
  const { port } = await listening(t)

  const big = await fetch(`http://127.0.0.1:${port}/external/v1/products`, { headers: { 'x-request-id': 'fetch-431', 'x-big': 'a'.repeat(100_000) } })
  const bigBody = refused(t, { statusCode: big.status, headers: Object.fromEntries(big.headers), body: await big.text() }, 431, 'request_header_too_large', 'fetch, 100 kB of headers')
  t.equal(bigBody.requestId, 'fetch-431', 'the X-Request-Id read before the overflow is kept')

  const rawBig = await rawRequest(port, ['GET /external/v1/products HTTP/1.1\r\nHost: x\r\n', `X-Big: ${'a'.repeat(100_000)}\r\n\r\n`])
  refused(t, rawBig, 431, 'request_header_too_large', 'raw, 100 kB of headers')

  const noColon = await rawRequest(port, ['GET /external/v1/products HTTP/1.1\r\nHost: x\r\nX-Request-Id: no-colon\r\nNo colon here\r\n\r\n'])
  t.equal(refused(t, noColon, 400, 'malformed_request', 'a header line without a colon').requestId, 'no-colon')

  const noHost = await rawRequest(port, ['GET /external/v1/products HTTP/1.1\r\nX-Request-Id: no-host\r\n\r\n'])
  const noHostBody = refused(t, noHost, 400, 'malformed_request', 'HTTP/1.1 without Host')
  t.equal(noHostBody.requestId, 'no-host')
  t.equal(noHostBody.message, 'An HTTP/1.1 request needs a Host header')
  const oldHttp = await rawRequest(port, ['GET /healthz HTTP/1.0\r\n\r\n'])
  t.equal(oldHttp.statusCode, 200, 'HTTP/1.0 needs no Host')

  const tunnel = await rawRequest(port, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: tunnel\r\n\r\n'])
  const tunnelBody = refused(t, tunnel, 404, 'not_found', 'CONNECT')
  t.equal(tunnelBody.requestId, 'tunnel')
  t.ok(tunnel.closed, 'CONNECT: the connection is closed after the answer')

  const expectation = await rawRequest(port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n'])
  t.equal(expectation.statusCode, 200, 'an Expect the service does not know is ignored, not an empty 417')
  t.match(expectation.headers['request-id'], /./, 'with its Request-Id')
})
