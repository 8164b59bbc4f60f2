import { EventEmitter } from 'node:events'
import net, { type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import t from 'tap'
import { Type } from 'typebox'
import { ERRORS } from '../../errors.ts'
import { generateSecret } from '../../lib/api-key-secret.ts'
import { clientErrorHandler } from '../../plugins/errors.ts'
import { authHeaders, buildTestApp, expectError, importProducts, makeKey, makeProduct } from '../helper.ts'
import { rawRequest, type RawAnswer } from '../raw-http.ts'

const ERRORS_BY_CODE: Record<string, string> = {
  ...Object.fromEntries(Object.entries(ERRORS).map(([code, { message }]) => [code, message])),
  request_header_too_large: 'The request headers are larger than the service accepts (16 KiB); the connection is closed'
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const FAKE_KEY = generateSecret()
const SQL_TEXT = `insert into "api_keys" ("key_hash") values ('${FAKE_KEY}') returning "id"`

// Log lines, to check that failures are logged with the request id.
const logLines: Array<Record<string, unknown>> = []
const stream = new Writable({
  write (chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logLines.push(JSON.parse(line) as Record<string, unknown>)
    done()
  }
})

// BODY_LIMIT is lowered so the 413 needs only a small body.
const app = await buildTestApp(t, { env: { BODY_LIMIT: '1024' }, logger: { level: 'error', stream } })

// Routes that exist only in this test: one failing with internal detail, one taking a JSON body.
app.get('/test/boom', async () => {
  const err = new Error(`syntax error at or near "values": ${SQL_TEXT}`)
  Object.assign(err, { code: '42601', query: SQL_TEXT, apiKey: FAKE_KEY })
  throw err
})
app.get('/test/boom-status', async () => {
  // A 5xx with a status of its own still answers internal_error without its message.
  throw Object.assign(new Error(`upstream said ${FAKE_KEY}`), { statusCode: 502 })
})
app.get('/test/throw-string', async () => {
  // eslint-disable-next-line no-throw-literal -- what this test is about
  throw `select * from api_keys where key = '${FAKE_KEY}'`
})
app.get('/test/throw-null', async () => {
  // eslint-disable-next-line no-throw-literal -- what this test is about
  throw null
})
app.post('/test/echo', { schema: { body: Type.Object({ name: Type.String() }) } }, async (request) => request.body)

const { key } = await makeKey(app, ['products:list', 'products:find'])
const { key: listOnly } = await makeKey(app, ['products:list'])
const product = makeProduct()
await importProducts(app, [product])

t.test('400 validation_failed lists details', async (t) => {
  const res = await app.inject({ url: '/external/v1/products?page=abc&isAvailable=maybe', headers: authHeaders(key) })
  expectError(t, res, 400, 'validation_failed', { details: true })
  t.match(res.json(), { details: [{ path: /^query\.(page|isAvailable)$/, message: String }] })
})

t.test('400 invalid_product_id', async (t) => {
  expectError(t, await app.inject({ url: '/external/v1/products/not-a-guid', headers: authHeaders(key) }), 400, 'invalid_product_id')
})

t.test('400 invalid_json for a body that is not JSON', async (t) => {
  for (const payload of ['{"name": ', 'not json', '{"name": "a",}']) {
    const res = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload })
    expectError(t, res, 400, 'invalid_json')
  }
  const empty = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '' })
  expectError(t, empty, 400, 'invalid_json')
  // A JSON body that breaks the schema is a validation error, not invalid_json.
  const wrong = await app.inject({ method: 'POST', url: '/test/echo', payload: { name: 5 } })
  expectError(t, wrong, 400, 'validation_failed', { details: true })
  t.match(wrong.json(), { details: [{ path: 'body.name', message: String }] })
  const ok = await app.inject({ method: 'POST', url: '/test/echo', payload: { name: 'x' } })
  t.equal(ok.statusCode, 200)
})

t.test('413 payload_too_large over BODY_LIMIT', async (t) => {
  const payload = JSON.stringify({ name: 'x'.repeat(2000) })
  const res = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload })
  expectError(t, res, 413, 'payload_too_large')
  const under = await app.inject({ method: 'POST', url: '/test/echo', payload: { name: 'x'.repeat(900) } })
  t.equal(under.statusCode, 200)
})

t.test('415 unsupported_media_type', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/xml' }, payload: '<name>x</name>' })
  expectError(t, res, 415, 'unsupported_media_type')
})

t.test('401 invalid_api_key', async (t) => {
  expectError(t, await app.inject({ url: '/external/v1/products' }), 401, 'invalid_api_key')
  expectError(t, await app.inject({ url: '/external/v1/products', headers: authHeaders(generateSecret()) }), 401, 'invalid_api_key')
})

t.test('403 insufficient_scope', async (t) => {
  const res = await app.inject({ url: `/external/v1/products/${product.id}`, headers: authHeaders(listOnly) })
  expectError(t, res, 403, 'insufficient_scope')
  t.match(res.json(), { message: /products:find/ })
})

t.test('404 product_not_found', async (t) => {
  const res = await app.inject({ url: '/external/v1/products/00000000-0000-4000-8000-000000000000', headers: authHeaders(key) })
  expectError(t, res, 404, 'product_not_found')
})

t.test('404 not_found for an unknown route, with and without a key', async (t) => {
  for (const url of ['/external/v1/nope', '/external/v1/products/a/b', '/external/v2/products', '/nope', '/']) {
    expectError(t, await app.inject({ url }), 404, 'not_found')
    expectError(t, await app.inject({ url, headers: authHeaders(key) }), 404, 'not_found')
    expectError(t, await app.inject({ url, headers: authHeaders(generateSecret()) }), 404, 'not_found')
  }
  expectError(t, await app.inject({ method: 'DELETE', url: '/external/v1/products', headers: authHeaders(key) }), 404, 'not_found')
})

t.test('500 internal_error shows nothing from the inside', async (t) => {
  for (const url of ['/test/boom', '/test/boom-status', '/test/throw-string', '/test/throw-null']) {
    logLines.length = 0
    const res = await app.inject({ url, headers: { 'x-request-id': `trace-${url.slice(6)}` } })
    t.equal(res.statusCode, 500)
    const body = res.json<Record<string, unknown>>()
    t.same(body, { error: 'internal_error', message: body.message, requestId: `trace-${url.slice(6)}` })
    t.type(body.message, 'string')
    for (const secret of [FAKE_KEY, 'insert', 'api_keys', 'syntax error', 'upstream', '42601', 'stack', ' at ', '.ts:']) {
      t.notMatch(res.body, secret, `the body does not contain ${secret}`)
    }
    // The failure is logged, with the request id, so support can find it.
    t.ok(logLines.some((l) => l.requestId === `trace-${url.slice(6)}` && l.level === 50), 'logged with the request id')
  }
})

t.test('every response carries a Request-Id header', async (t) => {
  const requests = [
    { url: '/healthz' },
    { url: '/external/v1/products', headers: authHeaders(key) },
    { url: '/external/v1/products?page=x', headers: authHeaders(key) },
    { url: '/external/v1/products' },
    { url: `/external/v1/products/${product.id}`, headers: authHeaders(listOnly) },
    { url: '/nope' },
    { url: '/test/boom' },
    { method: 'POST' as const, url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '{' },
    { method: 'POST' as const, url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(5000) }) }
  ]
  const seen = new Set<string>()
  for (const request of requests) {
    const res = await app.inject(request)
    const id = res.headers['request-id']
    t.match(id, UUID, `${request.url} → ${res.statusCode}`)
    if (res.statusCode >= 400) t.equal(res.json().requestId, id)
    seen.add(String(id))
  }
  t.equal(seen.size, requests.length, 'each request has its own id')
})

t.test('a safe client X-Request-Id is kept, an unsafe one replaced', async (t) => {
  const safe = ['abc', 'A-b_c.d:e', '0', 'x'.repeat(128), 'f47ac10b-58cc-4372-a567-0e02b2c3d479']
  for (const given of safe) {
    const res = await app.inject({ url: '/external/v1/products', headers: { 'x-request-id': given } })
    t.equal(res.headers['request-id'], given)
    t.equal(res.json().requestId, given)
  }
  const unsafe = ['', 'x'.repeat(129), 'has space', 'semi;colon', '<script>', 'slash/id', 'ünïcode', 'new\tline']
  for (const given of unsafe) {
    const res = await app.inject({ url: '/external/v1/products', headers: { 'x-request-id': given } })
    t.match(res.headers['request-id'], UUID, JSON.stringify(given))
    t.equal(res.json().requestId, res.headers['request-id'])
  }
  const ok = await app.inject({ url: '/external/v1/products', headers: { ...authHeaders(key), 'x-request-id': 'order-42' } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers['request-id'], 'order-42')
})

t.test('a URL the router rejects still answers the error body', async (t) => {
  for (const url of ['/external/v1/products/%E0%A4%A', `/external/v1/products/${'a'.repeat(250)}`]) {
    const res = await app.inject({ url, headers: { ...authHeaders(key), 'x-request-id': 'bad-url' } })
    expectError(t, res, 400, 'validation_failed', { details: true })
    t.equal(res.headers['request-id'], 'bad-url')
    t.notMatch(res.body, 'aaaaaaaa', 'the path is not echoed')
  }
})

t.test('a body with a __proto__ or constructor.prototype key names the problem, not "invalid JSON"', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['{"__proto__":{"isAdmin":true},"name":"x"}', 'body', '__proto__'],
    ['{"name":"x","nested":[{"__proto__":null}]}', 'body.nested[0]', '__proto__'],
    ['{"name":"x","constructor":{"prototype":{"x":1}}}', 'body', 'constructor.prototype']
  ]
  for (const [payload, path, key] of cases) {
    const res = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload })
    const body = expectError(t, res, 400, 'validation_failed', { details: true, what: payload })
    t.equal(body.message, `${path}: must not contain a ${key} key`)
    t.same(body.details, [{ path, message: `must not contain a ${key} key` }])
  }
  // A constructor key that holds no prototype is an ordinary key.
  const plain = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"name":"x","constructor":"y"}' })
  t.equal(plain.statusCode, 200)
  t.equal(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was touched')
})

// ---- Requests Node's HTTP parser refuses: through a listening app and a raw socket.

t.test('requests the HTTP parser refuses answer the error body with a Request-Id, and close the connection', async (t) => {
  const parserLog: Array<Record<string, unknown>> = []
  const listening = await buildTestApp(t, {
    database: app.database,
    logger: {
      level: 'info',
      stream: new Writable({
        write (chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') parserLog.push(JSON.parse(line) as Record<string, unknown>)
          done()
        }
      })
    }
  })
  await listening.listen({ port: 0, host: '127.0.0.1' })
  const port = (listening.server.address() as AddressInfo).port
  const refused = (answer: RawAnswer, status: number, code: string, what: string) => {
    t.equal(answer.statusCode, status, `${what}: status ${status}`)
    t.match(answer.headers['content-type'], /^application\/json/, `${what}: JSON`)
    const body = JSON.parse(answer.body) as Record<string, unknown>
    t.same(Object.keys(body).sort(), ['error', 'message', 'requestId'], `${what}: the error body`)
    t.equal(body.error, code, `${what}: ${code}`)
    t.equal(body.message, ERRORS_BY_CODE[code], `${what}: its message`)
    t.equal(body.requestId, answer.headers['request-id'], `${what}: requestId is the Request-Id header`)
    t.equal(answer.headers.connection, 'close', `${what}: connection: close`)
    t.ok(answer.closed, `${what}: the server closed the connection`)
    return body
  }

  const big = await rawRequest(port, ['GET /external/v1/products HTTP/1.1\r\nHost: x\r\nX-Request-Id: big-1\r\n', `X-Big: ${'a'.repeat(100_000)}\r\n\r\n`])
  const bigBody = refused(big, 431, 'request_header_too_large', '100 kB of headers')
  t.equal(bigBody.requestId, 'big-1', 'a safe X-Request-Id is kept, as on any request')

  const badHeader = await rawRequest(port, ['GET /external/v1/products HTTP/1.1\r\nHost: x\r\nX-Request-Id: bad-2\r\nNo colon here\r\n\r\n'])
  t.equal(refused(badHeader, 400, 'malformed_request', 'a header line without a colon').requestId, 'bad-2')

  const badLine = await rawRequest(port, ['NOT HTTP AT ALL\r\n\r\n'])
  t.match(refused(badLine, 400, 'malformed_request', 'a malformed request line').requestId, UUID, 'an id of our own')

  const unsafeId = await rawRequest(port, ['GET / HTTP/1.1\r\nHost: x\r\nX-Request-Id: has space\r\nBad\u0001Header: x\r\n\r\n'])
  t.match(refused(unsafeId, 400, 'malformed_request', 'a control character in a header name').requestId, UUID, 'an unsafe X-Request-Id is replaced')

  // A good request first on a keep-alive connection: it is answered, then the bad one closes it.
  const keepAlive = await rawRequest(port, ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBroken\r\n\r\n'], { responses: 2 })
  t.same(keepAlive.all.map((r) => r.statusCode), [200, 400], 'the good request\'s answer is intact')
  refused(keepAlive, 400, 'malformed_request', 'a malformed request after a good one')

  const logged = parserLog.filter((line) => line.msg === 'request refused by the HTTP parser')
  t.same(logged.map((line) => [line.requestId, line.error]).slice(0, 2), [['big-1', 'request_header_too_large'], ['bad-2', 'malformed_request']],
    'each refusal is logged with its request id, so support can find it')
})

t.test('the client error handler: a timeout, and sockets that cannot be answered', async (t) => {
  const handler = clientErrorHandler(() => 'fixed-id')
  const log = { info: () => {} }
  // A connected pair of sockets: what the handler writes to one, the other reads.
  const pair = async () => {
    const server = net.createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { server.close() })
    const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve))
    const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1')
    const received: Buffer[] = []
    client.on('data', (d) => received.push(d))
    const closed = new Promise<string>((resolve) => client.on('close', () => resolve(Buffer.concat(received).toString('utf8'))))
    client.on('error', () => {})
    t.teardown(() => { client.destroy() })
    return { socket: await accepted, closed }
  }

  const timeout = await pair()
  handler.call({ log } as never, Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), timeout.socket)
  const text = await timeout.closed
  t.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  t.match(text, '\r\nrequest-id: fixed-id\r\n')
  t.same(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { error: 'request_timeout', message: ERRORS_BY_CODE.request_timeout, requestId: 'fixed-id' })

  const reset = await pair()
  handler.call({ log } as never, Object.assign(new Error('reset'), { code: 'ECONNRESET' }), reset.socket)
  t.notOk(reset.socket.destroyed, 'a reset connection is left to Node')
  reset.socket.destroy()

  // A response still being written for a request ahead goes first; the refusal follows it.
  const answering = await pair()
  const inFlight = Object.assign(new EventEmitter(), { writableFinished: false })
  Object.assign(answering.socket, { _httpMessage: inFlight })
  handler.call({ log } as never, Object.assign(new Error('bad'), { code: 'HPE_INVALID_METHOD' }), answering.socket)
  handler.call({ log } as never, Object.assign(new Error('bad again'), { code: 'HPE_INVALID_METHOD' }), answering.socket)
  await new Promise((resolve) => setTimeout(resolve, 50))
  answering.socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok')
  inFlight.emit('finish')
  const both = await answering.closed
  t.match(both, /^HTTP\/1\.1 200 OK\r\n[^]*ok/, 'the response ahead is whole')
  t.equal(both.match(/HTTP\/1\.1 400 Bad Request/g)?.length, 1, 'then one refusal, however often the parser reports')

  const ended = await pair()
  ended.socket.end()
  handler.call({ log } as never, Object.assign(new Error('bad'), { code: 'HPE_INVALID_METHOD' }), ended.socket)
  t.equal(await ended.closed, '', 'a socket that can take no more is closed')
})
