// Rate limits: both header generations on every authenticated response, 429
// with Retry-After, per-key overrides, per-IP limits on failed authentication, counts shared
// through Redis by several instances, and serving on when Redis is gone.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import t from 'tap'
import type { App } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { setApiKeyRateLimit } from '../../db/api-keys.ts'
import { rollKey } from '../../services/api-key-admin.ts'
import { authHeaders, buildTestApp, createTestDatabase, expectError, importProducts, makeKey, makeProduct, sleep, type Answer } from '../helper.ts'
import { startTcpProxy } from '../tcp-proxy.ts'

const { AUTH_FAILURE_LIMIT } = loadConfig({})

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const REDIS_URL = process.env.TEST_REDIS_URL
const needsRedis = REDIS_URL ? {} : { skip: 'needs TEST_REDIS_URL' }
const WINDOW = 60
const LIST = '/external/v1/products'

/** A client address no other test (in this file or another one sharing Redis) uses. */
function uniqueIp (): string {
  const [a, b, c] = randomBytes(3)
  return `10.${a!}.${b!}.${Math.max(1, c!)}`
}

type Headers = Record<string, string | string[] | number | undefined>

/** Checks the five rate-limit headers agree with each other; returns their numbers. */
function checkHeaders (t: T, headers: Headers, expected: { policy: 'per-key' | 'per-ip', limit: number, window?: number }, what: string) {
  const window = expected.window ?? WINDOW
  const limit = Number(headers['ratelimit-limit'])
  const remaining = Number(headers['ratelimit-remaining'])
  const reset = Number(headers['ratelimit-reset'])
  t.equal(limit, expected.limit, `${what}: RateLimit-Limit`)
  t.ok(Number.isInteger(remaining) && remaining >= 0 && remaining <= limit, `${what}: RateLimit-Remaining ${String(headers['ratelimit-remaining'])}`)
  t.ok(Number.isInteger(reset) && reset >= 0 && reset <= window, `${what}: RateLimit-Reset ${String(headers['ratelimit-reset'])} within the window`)
  t.equal(headers['ratelimit-policy'], `"${expected.policy}";q=${expected.limit};w=${window}`, `${what}: RateLimit-Policy (draft-11)`)
  t.equal(headers.ratelimit, `"${expected.policy}";r=${remaining};t=${reset}`, `${what}: RateLimit (draft-11)`)
  return { limit, remaining, reset }
}

function check429 (t: T, res: Answer, what: string) {
  expectError(t, res, 429, 'rate_limit_exceeded', { message: /rate limit/i, what })
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= WINDOW, `${what}: Retry-After ${String(res.headers['retry-after'])} in seconds`)
  t.equal(res.headers['ratelimit-remaining'], '0', `${what}: nothing remaining`)
}

const { database } = await createTestDatabase(t)
const product = makeProduct({ name: 'Rate limited' })

/** An instance on this file's database; several may share it, as a fleet does. */
function appWith (t: T, env: Record<string, string> = {}): Promise<App> {
  return buildTestApp(t, { database, env })
}

const seeded = await appWith(t)
await importProducts(seeded, [product])

t.test('every authenticated /external/v1 response carries both header generations', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '50' })
  const { key } = await makeKey(app, ['products:list', 'products:find', 'orders:list'])
  const remoteAddress = uniqueIp()
  const requests: Array<[string, { method?: 'GET' | 'POST', url: string, headers?: Record<string, string>, payload?: string }, number]> = [
    ['list products', { url: LIST }, 200],
    ['get a product', { url: `${LIST}/${product.id}` }, 200],
    ['a product that does not exist', { url: `${LIST}/${crypto.randomUUID()}` }, 404],
    ['an id that is not a GUID', { url: `${LIST}/nope` }, 400],
    ['a query that breaks the schema', { url: `${LIST}?page=abc` }, 400],
    ['list orders', { url: '/external/v1/orders' }, 200],
    ['a scope the key lacks', { url: '/external/v1/orders/1' }, 403],
    ['create order without the scope', { method: 'POST', url: '/external/v1/orders', headers: { 'content-type': 'application/json' }, payload: '{}' }, 403]
  ]
  let previous = 50
  for (const [what, request, status] of requests) {
    const res = await app.inject({ method: request.method ?? 'GET', url: request.url, remoteAddress, headers: { ...authHeaders(key), ...request.headers }, ...(request.payload === undefined ? {} : { payload: request.payload }) })
    t.equal(res.statusCode, status, `${what}: ${status}`)
    const { remaining } = checkHeaders(t, res.headers, { policy: 'per-key', limit: 50 }, what)
    t.equal(remaining, previous - 1, `${what}: each request takes one from the key's budget`)
    previous = remaining
  }

  const { key: writer } = await makeKey(app, ['orders:create'])
  const json = { ...authHeaders(writer), 'content-type': 'application/json' }
  const order = JSON.stringify({ customerName: 'Headers', customerPhone: '+14155550123', items: [{ productId: product.id }] })
  const writes: Array<[string, Record<string, string>, string, number]> = [
    ['create order', json, order, 201],
    ['create order with a body that is not JSON', json, '{', 400],
    ['create order with the wrong content type', { ...authHeaders(writer), 'content-type': 'text/plain' }, 'hi', 415]
  ]
  previous = 50
  for (const [what, headers, payload, status] of writes) {
    const res = await app.inject({ method: 'POST', url: '/external/v1/orders', remoteAddress, headers, payload })
    t.equal(res.statusCode, status, `${what}: ${status}`)
    const { remaining } = checkHeaders(t, res.headers, { policy: 'per-key', limit: 50 }, what)
    t.equal(remaining, previous - 1, `${what}: counted`)
    previous = remaining
  }
})

t.test('a key over its limit gets 429 rate_limit_exceeded with Retry-After', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '3' })
  const { key } = await makeKey(app, ['products:list'])
  const { key: other } = await makeKey(app, ['products:list'])
  const remoteAddress = uniqueIp()
  for (let i = 1; i <= 3; i++) {
    const res = await app.inject({ url: LIST, remoteAddress, headers: authHeaders(key) })
    t.equal(res.statusCode, 200, `request ${i} of 3`)
    t.equal(checkHeaders(t, res.headers, { policy: 'per-key', limit: 3 }, `request ${i}`).remaining, 3 - i)
  }
  for (const what of ['the 4th request', 'the 5th request']) {
    const res = await app.inject({ url: LIST, remoteAddress, headers: authHeaders(key) })
    check429(t, res, what)
    checkHeaders(t, res.headers, { policy: 'per-key', limit: 3 }, what)
  }
  const fresh = await app.inject({ url: LIST, remoteAddress, headers: authHeaders(other) })
  t.equal(fresh.statusCode, 200, 'another key from the same address has its own budget')
  t.equal(fresh.headers['ratelimit-remaining'], '2')
})

t.test('the window resets', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW: '1' })
  const { key } = await makeKey(app, ['products:list'])
  const remoteAddress = uniqueIp()
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ url: LIST, remoteAddress, headers: authHeaders(key) })).statusCode, 200)
  const limited = await app.inject({ url: LIST, remoteAddress, headers: authHeaders(key) })
  t.equal(limited.statusCode, 429)
  checkHeaders(t, limited.headers, { policy: 'per-key', limit: 2, window: 1 }, '429 in a one-second window')
  await sleep(1100)
  const res = await app.inject({ url: LIST, remoteAddress, headers: authHeaders(key) })
  t.equal(res.statusCode, 200, 'served again in the next window')
  t.equal(res.headers['ratelimit-remaining'], '1')
})

t.test('a per-key override applies instead of RATE_LIMIT_MAX, and the operator can change it', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '100', KEY_CACHE_TTL_MS: '100' })
  const { id, key } = await makeKey(app, ['products:list'], { rateLimit: 3 })
  const { key: plain } = await makeKey(app, ['products:list'])
  const remoteAddress = uniqueIp()
  const get = (secret: string) => app.inject({ url: LIST, remoteAddress, headers: authHeaders(secret) })

  checkHeaders(t, (await get(plain)).headers, { policy: 'per-key', limit: 100 }, 'a key without an override')
  for (let i = 1; i <= 3; i++) {
    const res = await get(key)
    t.equal(res.statusCode, 200)
    checkHeaders(t, res.headers, { policy: 'per-key', limit: 3 }, `override, request ${i}`)
  }
  check429(t, await get(key), 'the 4th request under an override of 3')

  // Raised to 6: the 4 requests already counted stay in this window, 2 more are allowed.
  t.ok(await setApiKeyRateLimit(app.database.db, id, 6))
  await sleep(200)
  for (let i = 5; i <= 6; i++) {
    const res = await get(key)
    t.equal(res.statusCode, 200, `request ${i} after raising the override to 6`)
    t.equal(checkHeaders(t, res.headers, { policy: 'per-key', limit: 6 }, `raised, request ${i}`).remaining, 6 - i)
  }
  check429(t, await get(key), 'the 7th request under an override of 6')

  // Cleared: back to RATE_LIMIT_MAX.
  t.ok(await setApiKeyRateLimit(app.database.db, id, null))
  await sleep(200)
  const res = await get(key)
  t.equal(res.statusCode, 200, 'no override: RATE_LIMIT_MAX again')
  t.equal(checkHeaders(t, res.headers, { policy: 'per-key', limit: 100 }, 'override cleared').remaining, 100 - 8)
})

t.test('a rolled key has one budget: requests with its new and its previous secret count together', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '4' })
  const { id, key: previous } = await makeKey(app, ['products:list'])
  const { key: current } = await rollKey(app.database, id, 60_000)
  const remoteAddress = uniqueIp()
  const get = (secret: string) => app.inject({ url: LIST, remoteAddress, headers: authHeaders(secret) })
  const remaining: number[] = []
  for (const secret of [previous, current, previous, current]) {
    const res = await get(secret)
    t.equal(res.statusCode, 200)
    remaining.push(checkHeaders(t, res.headers, { policy: 'per-key', limit: 4 }, 'either secret').remaining)
  }
  t.strictSame(remaining, [3, 2, 1, 0], 'each request, with either secret, takes from the same count')
  check429(t, await get(previous), 'the previous secret, once the key has used its budget')
  check429(t, await get(current), 'the new secret, once the key has used its budget')
  const { key: other } = await makeKey(app, ['products:list'])
  t.equal((await get(other)).statusCode, 200, 'another key keeps its own budget')
})

t.test('failed authentication is limited per client IP, apart from the key budget', async (t) => {
  const app = await appWith(t, { RATE_LIMIT_MAX: '10' })
  const { key } = await makeKey(app, ['products:list'])
  const ip = uniqueIp()
  const unknownKey = `sk_${randomBytes(32).toString('base64url')}`
  const bad = [{ 'x-api-key': 'not-a-key' }, { 'x-api-key': unknownKey }, {}, { authorization: 'Bearer nope' }]

  let keyRemaining = 10
  for (let i = 1; i <= AUTH_FAILURE_LIMIT; i++) {
    const res = await app.inject({ url: LIST, remoteAddress: ip, headers: bad[i % bad.length]! })
    t.equal(res.statusCode, 401, `failure ${i}: 401`)
    if (i === 1 || i === AUTH_FAILURE_LIMIT) {
      t.equal(checkHeaders(t, res.headers, { policy: 'per-ip', limit: AUTH_FAILURE_LIMIT }, `failure ${i}`).remaining, AUTH_FAILURE_LIMIT - i)
    }
    if (i % 20 === 0) {
      // The key's own requests from the same address neither use nor are blocked by that budget.
      const ok = await app.inject({ url: LIST, remoteAddress: ip, headers: authHeaders(key) })
      t.equal(ok.statusCode, 200, `the valid key still works after ${i} failures`)
      keyRemaining--
      t.equal(checkHeaders(t, ok.headers, { policy: 'per-key', limit: 10 }, 'the valid key').remaining, keyRemaining, 'failures took nothing from the key')
    }
  }
  const limited = await app.inject({ url: LIST, remoteAddress: ip, headers: { 'x-api-key': unknownKey } })
  check429(t, limited, `failure ${AUTH_FAILURE_LIMIT + 1}`)
  checkHeaders(t, limited.headers, { policy: 'per-ip', limit: AUTH_FAILURE_LIMIT }, 'the per-IP 429')

  const ok = await app.inject({ url: LIST, remoteAddress: ip, headers: authHeaders(key) })
  t.equal(ok.statusCode, 200, 'a valid key from a blocked address is still served')
  t.equal(ok.headers['ratelimit-remaining'], String(keyRemaining - 1))
  const elsewhere = await app.inject({ url: LIST, remoteAddress: uniqueIp(), headers: { 'x-api-key': unknownKey } })
  t.equal(elsewhere.statusCode, 401, 'another address still gets 401')
})

t.test('TRUST_PROXY decides whether X-Forwarded-For names the client', async (t) => {
  const failures = (app: App, socketIp: string, forwardedFor: string) =>
    app.inject({ url: LIST, remoteAddress: socketIp, headers: { 'x-api-key': 'nope', 'x-forwarded-for': forwardedFor } })

  t.test('TRUST_PROXY=true: one bucket per forwarded address', async (t) => {
    const app = await appWith(t, { TRUST_PROXY: 'true' })
    const proxy = uniqueIp()
    const client = uniqueIp()
    for (let i = 1; i <= AUTH_FAILURE_LIMIT; i++) {
      const res = await failures(app, proxy, client)
      t.equal(res.statusCode, 401)
      if (i === AUTH_FAILURE_LIMIT) t.equal(res.headers['ratelimit-remaining'], '0')
    }
    check429(t, await failures(app, proxy, client), 'the forwarded client over its limit')
    const other = await failures(app, proxy, uniqueIp())
    t.equal(other.statusCode, 401, 'another client behind the same proxy is not blocked')
    t.equal(other.headers['ratelimit-remaining'], String(AUTH_FAILURE_LIMIT - 1))
  })

  t.test('TRUST_PROXY=false: X-Forwarded-For is ignored', async (t) => {
    const app = await appWith(t, { TRUST_PROXY: 'false' })
    const socketIp = uniqueIp()
    for (let i = 1; i <= AUTH_FAILURE_LIMIT; i++) {
      // A client that forges a new X-Forwarded-For each time still counts as one address.
      const res = await failures(app, socketIp, uniqueIp())
      t.equal(res.statusCode, 401)
      t.equal(res.headers['ratelimit-remaining'], String(AUTH_FAILURE_LIMIT - i))
    }
    check429(t, await failures(app, socketIp, uniqueIp()), 'forged X-Forwarded-For does not escape the limit')
  })
})

// ---------------------------------------------------------------------------------------
// Several instances sharing Redis, over real sockets.

interface Instance { app: App, base: string }

async function listening (t: T, env: Record<string, string>): Promise<Instance> {
  const app = await appWith(t, env)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, base: address }
}

/** A GET that must answer within `withinMs`; returns status, remaining and elapsed time. */
async function timedGet (instance: Instance, key: string, withinMs = 1000) {
  const started = performance.now()
  const res = await fetch(`${instance.base}${LIST}`, { headers: authHeaders(key), signal: AbortSignal.timeout(withinMs * 5) })
  await res.arrayBuffer()
  const elapsed = performance.now() - started
  return { status: res.status, remaining: Number(res.headers.get('ratelimit-remaining')), limit: Number(res.headers.get('ratelimit-limit')), elapsed, headers: res.headers }
}

function redisClient (t: T): Redis {
  const redis = new Redis(REDIS_URL!, { lazyConnect: false, maxRetriesPerRequest: 1 })
  t.teardown(() => { redis.disconnect() })
  return redis
}

async function waitReady (app: App, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (app.redis?.status !== 'ready') {
    if (Date.now() > deadline) throw new Error(`redis did not reconnect within ${timeoutMs} ms (status ${app.redis?.status ?? 'none'})`)
    await sleep(100)
  }
}

/** Two instances whose Redis is reached through a proxy a test can cut or stall; a key limited to 100. */
async function behindRedisProxy (t: T) {
  const target = new URL(REDIS_URL!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) })
  t.teardown(() => proxy.close())
  const env = { REDIS_URL: proxy.urlFor(REDIS_URL!), RATE_LIMIT_MAX: '100' }
  const [a, b] = [await listening(t, env), await listening(t, env)]
  const { id, key } = await makeKey(a.app, ['products:list'])
  const redis = redisClient(t)
  t.teardown(() => redis.del(`storefront:rl:key:${id}`))
  return { proxy, a, b, id, key, redis }
}

t.test('two instances sharing one Redis count one key together', needsRedis, async (t) => {
  const env = { REDIS_URL: REDIS_URL!, RATE_LIMIT_MAX: '6' }
  const [a, b] = [await listening(t, env), await listening(t, env)]
  t.equal(a.app.redis?.status, 'ready', 'instance A is connected to Redis')
  t.equal(b.app.redis?.status, 'ready', 'instance B is connected to Redis')
  const { id, key } = await makeKey(a.app, ['products:list'])
  const redis = redisClient(t)
  t.teardown(() => redis.del(`storefront:rl:key:${id}`))

  const seen: number[] = []
  for (const instance of [a, b, a, b, a, b]) {
    const res = await timedGet(instance, key)
    t.equal(res.status, 200)
    seen.push(res.remaining)
  }
  t.same(seen, [5, 4, 3, 2, 1, 0], 'each instance sees the requests made on the other')
  t.equal(await redis.get(`storefront:rl:key:${id}`), '6', 'counted in Redis under storefront:rl:key:<keyId>')
  const ttl = await redis.pttl(`storefront:rl:key:${id}`)
  t.ok(ttl > 0 && ttl <= WINDOW * 1000, `the count expires with the window (${ttl} ms)`)

  for (const instance of [a, b]) {
    const res = await fetch(`${instance.base}${LIST}`, { headers: authHeaders(key) })
    t.equal(res.status, 429, 'the 7th request is refused on either instance')
    t.match(await res.json(), { error: 'rate_limit_exceeded' })
    t.ok(res.headers.get('retry-after'), 'with Retry-After')
  }
})

t.test('failed authentications from one address are counted across instances', needsRedis, async (t) => {
  const env = { REDIS_URL: REDIS_URL!, TRUST_PROXY: 'true' }
  const [a, b] = [await listening(t, env), await listening(t, env)]
  const ip = uniqueIp()
  const redis = redisClient(t)
  t.teardown(() => redis.del(`storefront:rl:ip:${ip}`))
  const statuses: number[] = []
  for (let i = 0; i <= AUTH_FAILURE_LIMIT; i++) {
    const res = await fetch(`${(i % 2 === 0 ? a : b).base}${LIST}`, { headers: { 'x-api-key': 'nope', 'x-forwarded-for': ip } })
    await res.arrayBuffer()
    statuses.push(res.status)
  }
  t.same(statuses.slice(0, AUTH_FAILURE_LIMIT), Array(AUTH_FAILURE_LIMIT).fill(401))
  t.equal(statuses[AUTH_FAILURE_LIMIT], 429, `failure ${AUTH_FAILURE_LIMIT + 1}, spread over two instances, is refused`)
  t.equal(await redis.get(`storefront:rl:ip:${ip}`), String(AUTH_FAILURE_LIMIT + 1), 'counted under storefront:rl:ip:<ip>')
})

t.test('Redis cut: the service keeps answering with per-instance counts, then shares counts again', needsRedis, async (t) => {
  const { proxy, a, b, id, key, redis } = await behindRedisProxy(t)

  t.same([(await timedGet(a, key)).remaining, (await timedGet(b, key)).remaining], [99, 98], 'shared before the cut')

  proxy.cut()
  const during: Array<[string, number]> = []
  for (const [name, instance] of [['A', a], ['B', b], ['A', a], ['A', a], ['B', b]] as const) {
    const res = await timedGet(instance, key)
    t.equal(res.status, 200, `instance ${name} answers 200 while Redis is cut`)
    t.ok(res.elapsed < 1000, `instance ${name} answers in ${Math.round(res.elapsed)} ms (< 1 s)`)
    t.equal(res.limit, 100)
    during.push([name, res.remaining])
  }
  // Each instance counts on its own from a fresh window: A sees 1, 2, 3 requests and B 1, 2.
  t.same(during, [['A', 99], ['B', 99], ['A', 98], ['A', 97], ['B', 98]], 'counts are per instance during the outage')
  // Both clients must have seen the cut, or 'ready' below could be the stale status.
  for (const instance of [a, b]) {
    const deadline = Date.now() + 5000
    while (instance.app.redis?.status === 'ready' && Date.now() < deadline) await sleep(50)
  }
  t.not(a.app.redis?.status, 'ready', 'A knows Redis is gone')
  t.not(b.app.redis?.status, 'ready', 'B knows Redis is gone')

  await proxy.restore()
  await waitReady(a.app)
  await waitReady(b.app)
  const after = [await timedGet(a, key), await timedGet(b, key), await timedGet(a, key), await timedGet(b, key)]
  for (const res of after) t.equal(res.status, 200)
  const remaining = after.map((r) => r.remaining)
  t.same(remaining, [remaining[0], remaining[0]! - 1, remaining[0]! - 2, remaining[0]! - 3], `shared again after recovery: ${remaining.join(', ')}`)
  t.equal(remaining[0], 97, 'Redis kept counting from its count before the cut')
  t.equal(await redis.get(`storefront:rl:key:${id}`), '6')
})

t.test('Redis unreachable from the start: the instance still starts and serves', async (t) => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 9 })
  proxy.cut()
  t.teardown(() => proxy.close())
  const started = performance.now()
  const instance = await listening(t, { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, RATE_LIMIT_MAX: '2' })
  t.ok(performance.now() - started < 5000, 'start is not held up for long')
  const { key } = await makeKey(instance.app, ['products:list'])
  const statuses = []
  for (let i = 0; i < 3; i++) {
    const res = await timedGet(instance, key)
    t.ok(res.elapsed < 1000, `answered in ${Math.round(res.elapsed)} ms`)
    statuses.push(res.status)
  }
  t.same(statuses, [200, 200, 429], 'the limit still holds, counted in this instance')
})

t.test('Redis stalled (packets black-holed): every request still answers within about a second', needsRedis, async (t) => {
  const { proxy, a, b, key } = await behindRedisProxy(t)
  t.same([(await timedGet(a, key)).remaining, (await timedGet(b, key)).remaining], [99, 98], 'shared before the stall')

  proxy.stall()
  for (let i = 0; i < 6; i++) {
    const instance = i % 2 === 0 ? a : b
    const res = await timedGet(instance, key)
    t.equal(res.status, 200, `request ${i + 1} answers 200 while Redis does not answer`)
    t.ok(res.elapsed < 1000, `request ${i + 1} answers in ${Math.round(res.elapsed)} ms (< 1 s)`)
  }

  // A stalled connection still looks 'ready' to ioredis; restore() drops it, so wait for
  // the reconnection that follows rather than for the status.
  const reconnected = [a, b].map((i) => once(i.app.redis!, 'ready'))
  await proxy.restore()
  await Promise.all(reconnected)
  const after = [await timedGet(a, key), await timedGet(b, key)]
  t.equal(after[1]!.remaining, after[0]!.remaining - 1, `shared again after the stall: ${after.map((r) => r.remaining).join(', ')}`)
})
