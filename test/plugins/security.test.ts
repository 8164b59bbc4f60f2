// Response hardening: nosniff everywhere, orders never cached, a body limit
// answered 413 before anything reads a huge body, a Request-Id on every response, and keys
// kept out of the logs.
import { once } from 'node:events'
import { connect } from 'node:net'
import t from 'tap'
import { buildApp } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { generateSecret } from '../../lib/api-key-secret.ts'
import { authHeaders, buildTestApp, expectError, importProducts, line, makeKey, makeProduct, orderBody, sleep } from '../helper.ts'

const BODY_LIMIT = 4096
const app = await buildTestApp(t, { env: { BODY_LIMIT: String(BODY_LIMIT), RATE_LIMIT_MAX: '100000' } })
const product = makeProduct({ quantity: 1000 })
await importProducts(app, [product])
const { key } = await makeKey(app)
const { key: limitedKey } = await makeKey(app, ['products:list'], { rateLimit: 1 })

const orderJson = (extra: Record<string, unknown> = {}) => JSON.stringify(orderBody([line(product)], extra))

type Req = { method?: 'GET' | 'POST', url: string, headers?: Record<string, string>, payload?: string }
const json = { 'content-type': 'application/json' }

// One request for each kind of answer the service gives.
const REQUESTS: Array<[string, number, Req]> = [
  ['list products', 200, { url: '/external/v1/products', headers: authHeaders(key) }],
  ['create order', 201, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: orderJson() }],
  ['invalid query', 400, { url: '/external/v1/products?page=abc', headers: authHeaders(key) }],
  ['invalid JSON', 400, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: '{' }],
  ['no key', 401, { url: '/external/v1/products' }],
  ['scope missing', 403, { url: '/external/v1/orders', headers: authHeaders(limitedKey) }],
  ['no such route', 404, { url: '/nowhere' }],
  ['no such route under the API', 404, { url: '/external/v1/nowhere', headers: authHeaders(key) }],
  ['body too large', 413, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: orderJson({ padding: 'x'.repeat(BODY_LIMIT) }) }],
  ['wrong content type', 415, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), 'content-type': 'text/plain' }, payload: 'hello' }],
  ['/healthz', 200, { url: '/healthz' }],
  ['/readyz', 200, { url: '/readyz' }],
  ['/metrics', 200, { url: '/metrics' }],
  ['/openapi.json', 200, { url: '/openapi.json' }]
]

async function send (request: Req) {
  return app.inject({ method: request.method ?? 'GET', url: request.url, headers: request.headers ?? {}, ...(request.payload === undefined ? {} : { payload: request.payload }) })
}

t.test('X-Content-Type-Options: nosniff and a Request-Id on every response', async (t) => {
  const ids = new Set<string>()
  for (const [what, status, request] of REQUESTS) {
    const res = await send(request)
    t.equal(res.statusCode, status, `${what}: ${status}`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
    const id = res.headers['request-id']
    t.match(id, /^[A-Za-z0-9._:-]{1,128}$/, `${what}: Request-Id`)
    ids.add(String(id))
    if (status >= 400) t.equal(res.json<{ requestId: string }>().requestId, id, `${what}: the body's requestId is the header's`)
  }
  t.equal(ids.size, REQUESTS.length, 'a different id for each request')

  // The rate-limit 429 is built by the limiter, not a route: it must carry them too.
  await app.inject({ url: '/external/v1/products', headers: authHeaders(limitedKey) })
  const limited = await app.inject({ url: '/external/v1/products', headers: authHeaders(limitedKey) })
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['x-content-type-options'], 'nosniff', '429: nosniff')
  t.ok(limited.headers['request-id'], '429: Request-Id')
  t.equal(limited.json<{ requestId: string }>().requestId, limited.headers['request-id'])
})

t.test('a client X-Request-Id is kept when safe, replaced otherwise', async (t) => {
  const kept = ['abc-123', 'trace.id:42_x', 'a'.repeat(128)]
  for (const given of kept) {
    const res = await app.inject({ url: '/external/v1/products', headers: { 'x-request-id': given } })
    t.equal(res.headers['request-id'], given, `kept: ${given.slice(0, 20)}`)
    t.equal(res.json<{ requestId: string }>().requestId, given)
  }
  const replaced = ['', 'has space', 'a'.repeat(129), 'quote"d', 'line\u00e9', '<script>']
  for (const given of replaced) {
    const res = await app.inject({ url: '/healthz', headers: { 'x-request-id': given } })
    const id = String(res.headers['request-id'])
    t.not(id, given, `replaced: ${JSON.stringify(given.slice(0, 20))}`)
    t.match(id, /^[A-Za-z0-9._:-]{1,128}$/)
  }
})

// Order reads that succeed may be kept by the integrator's client, but checked again before
// each use (they carry an ETag); everything else about orders must not be stored at all.
t.test('Cache-Control on order responses: private, no-cache on a read that succeeded, no-store on the rest', async (t) => {
  const created = await send({ method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: orderJson() })
  t.equal(created.statusCode, 201)
  const orderId = created.json<{ id: string }>().id
  const NO_STORE = /^no-store$/
  const READ = /^private, no-cache$/
  const cases: Array<[string, number, Req, RegExp]> = [
    ['create order', 201, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: orderJson() }, NO_STORE],
    ['create order, refused', 400, { method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: '{}' }, NO_STORE],
    ['list orders', 200, { url: '/external/v1/orders', headers: authHeaders(key) }, READ],
    ['get order', 200, { url: `/external/v1/orders/${orderId}`, headers: authHeaders(key) }, READ],
    ['get order that is not there', 404, { url: `/external/v1/orders/${crypto.randomUUID()}`, headers: authHeaders(key) }, NO_STORE],
    ['list orders without a key', 401, { url: '/external/v1/orders' }, NO_STORE]
  ]
  for (const [what, status, request, cacheControl] of cases) {
    const res = await send(request)
    t.equal(res.statusCode, status, `${what}: ${status}`)
    t.match(res.headers['cache-control'], cacheControl, `${what}: ${String(cacheControl)}`)
  }
})

t.test('a body over BODY_LIMIT answers 413 payload_too_large', async (t) => {
  const big = orderJson({ padding: 'x'.repeat(BODY_LIMIT) })
  const res = await send({ method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: big })
  expectError(t, res, 413, 'payload_too_large')

  // Padded with a field the API ignores (note has its own, smaller limit).
  const justUnder = orderJson({ padding: 'x'.repeat(BODY_LIMIT - orderJson({ padding: '' }).length - 1) })
  t.ok(Buffer.byteLength(justUnder) < BODY_LIMIT)
  t.equal((await send({ method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: justUnder })).statusCode, 201, 'a body just under the limit is served')

  const anonymous = await send({ method: 'POST', url: '/external/v1/orders', headers: json, payload: big })
  t.equal(anonymous.statusCode, 401, 'without a key the body is never read: 401, not 413')
})

t.test('a chunked body over the limit is cut off with 413 too (no Content-Length to trust)', async (t) => {
  const base = new URL(await app.listen({ port: 0, host: '127.0.0.1' }))
  const socket = connect(Number(base.port), base.hostname)
  await once(socket, 'connect')
  let response = ''
  socket.on('data', (chunk) => { response += String(chunk) })
  socket.on('error', () => {})
  const closed = once(socket, 'close')
  socket.write(`POST /external/v1/orders HTTP/1.1\r\nHost: localhost\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`)
  const chunk = 'x'.repeat(1024)
  for (let i = 0; i < 8 && !socket.destroyed; i++) {
    socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
    await sleep(20)
  }
  if (!socket.destroyed) socket.end('0\r\n\r\n')
  await closed
  t.match(response, /^HTTP\/1\.1 413 /, '413')
  t.match(response, /"error":"payload_too_large"/)
  t.match(response, /\r\nrequest-id: /i, 'with a Request-Id')
})

t.test('the default limit is 1 MiB', async (t) => {
  const plain = await buildTestApp(t, { database: app.database, env: { RATE_LIMIT_MAX: '100000' } })
  t.equal(plain.config.BODY_LIMIT, 1024 * 1024)
  const res = await plain.inject({ method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), ...json }, payload: orderJson({ padding: 'x'.repeat(1024 * 1024) }) })
  t.equal(res.statusCode, 413)
  t.match(res.json(), { error: 'payload_too_large' })
})

t.test('API keys never reach the logs, even at trace level', async (t) => {
  // The app's own logger configuration (buildTestApp silences it), writing to stdout as in
  // production. stdout is captured only while the app is built and the requests run, so
  // tap's output is untouched; pino writes through process.stdout.write (rather than to the
  // file descriptor) when that was replaced before the logger is made.
  const unknownKey = generateSecret()
  const lines: string[] = []
  const write = process.stdout.write
  process.stdout.write = ((chunk: string | Uint8Array) => { lines.push(String(chunk)); return true }) as typeof process.stdout.write
  try {
    const logged = await buildApp({ config: loadConfig({ LOG_LEVEL: 'trace', RATE_LIMIT_MAX: '100000' }), database: app.database })
    t.teardown(() => logged.close())
    for (const headers of [
      { 'x-api-key': key },
      { authorization: `Api-Key ${key}` },
      { 'x-api-key': unknownKey },
      { authorization: `api-key ${unknownKey}` },
      { 'x-api-key': key, authorization: `Api-Key ${unknownKey}` },
      { authorization: `Bearer ${key}` }
    ]) await logged.inject({ url: '/external/v1/products', headers })
    await logged.inject({ method: 'POST', url: '/external/v1/orders', headers: { 'x-api-key': key, ...json }, payload: '{' })
    await logged.inject({ method: 'POST', url: '/external/v1/orders', headers: { 'x-api-key': key, ...json }, payload: orderJson({ padding: 'x'.repeat(BODY_LIMIT * 300) }) })
  } finally {
    process.stdout.write = write
  }
  const logs = lines.join('')
  t.ok(lines.length >= 16, `the requests were logged (${lines.length} lines)`)
  t.notOk(logs.includes(key.slice(3, 20)), 'no part of a valid key is in the logs')
  t.notOk(logs.includes(unknownKey.slice(3, 20)), 'nor of an unknown one')
})
