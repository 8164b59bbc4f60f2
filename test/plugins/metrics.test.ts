// GET /metrics: Prometheus text without a key; requests by route, method and
// status with their latency; authentication failures by cause; 429s; orders and idempotent
// replays; the database pool. And /readyz, which reports Redis when REDIS_URL is set.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import type { App } from '../../app.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, sleep } from '../helper.ts'
import { startTcpProxy } from '../tcp-proxy.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const REDIS_URL = process.env.TEST_REDIS_URL
const LIST = '/external/v1/products'

interface Sample { labels: Record<string, string>, value: number }

/** The samples of one metric in Prometheus text, with their labels. */
function samples (text: string, name: string): Sample[] {
  const found: Sample[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    found.push({ labels, value: Number(match[4]) })
  }
  return found
}

/** The sum of a metric's samples whose labels include `labels`; 0 when there is none. */
function value (text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text, name)
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
}

async function scrape (app: App): Promise<string> {
  const res = await app.inject({ url: '/metrics' })
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`)
  return res.body
}

/** How much each metric moved while `action` ran. */
async function delta (app: App, action: () => Promise<unknown>, measures: Array<[string, Record<string, string>?]>) {
  const before = await scrape(app)
  await action()
  const after = await scrape(app)
  return measures.map(([name, labels]) => value(after, name, labels) - value(before, name, labels))
}

function uniqueIp (): string {
  const [a, b, c] = randomBytes(3)
  return `10.${a!}.${b!}.${Math.max(1, c!)}`
}

const app = await buildTestApp(t, { env: { RATE_LIMIT_MAX: '1000' } })
const product = makeProduct({ name: 'Metered', quantity: 100 })
await importProducts(app, [product])

t.test('GET /metrics needs no key and is Prometheus text', async (t) => {
  const res = await app.inject({ url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.notOk(res.headers['ratelimit-limit'], 'not rate limited like the API')
  for (const name of ['http_requests_total', 'storefront_orders_created_total', 'storefront_auth_failures_total', 'storefront_rate_limited_total', 'storefront_idempotent_replays_total']) {
    t.match(res.body, new RegExp(`^# TYPE ${name} counter$`, 'm'), `${name} is a counter`)
  }
  t.match(res.body, /^# TYPE http_request_duration_seconds histogram$/m, 'latency is a histogram')
  t.match(res.body, /^# TYPE storefront_db_pool_connections gauge$/m)
  t.match(res.body, /^process_cpu_user_seconds_total \d/m, 'with the process defaults')
  for (const line of res.body.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
    // Prometheus parses values as Go's ParseFloat does: NaN and Inf in any case.
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? (-?[0-9.e+-]+|nan|[+-]?inf)$/i.test(line)) t.fail(`not a Prometheus sample line: ${line}`)
  }
})

t.test('requests are counted by route, method and status, with their latency', async (t) => {
  const { key } = await makeKey(app, ['products:list', 'products:find'])
  const route = { route: LIST, method: 'GET' }
  const byId = { route: `${LIST}/:id`, method: 'GET' }
  const [ok, notFound, count, sum, inf, byIdCount] = await delta(app, async () => {
    await app.inject({ url: LIST, headers: authHeaders(key) })
    await app.inject({ url: `${LIST}?page=2`, headers: authHeaders(key) })
    await app.inject({ url: `${LIST}/${crypto.randomUUID()}`, headers: authHeaders(key) })
  }, [
    ['http_requests_total', { ...route, status: '200' }],
    ['http_requests_total', { ...byId, status: '404' }],
    ['http_request_duration_seconds_count', route],
    ['http_request_duration_seconds_sum', route],
    ['http_request_duration_seconds_bucket', { ...route, le: '+Inf' }],
    ['http_request_duration_seconds_count', byId]
  ])
  t.equal(ok, 2, 'two 200s on the route pattern, whatever the query string')
  t.equal(notFound, 1, 'a 404 on /products/:id, under its pattern')
  t.equal(count, 2, 'two latencies observed')
  t.equal(inf, 2, 'in the +Inf bucket too')
  t.ok(sum! > 0, `with a positive total time (${sum!} s)`)
  t.equal(byIdCount, 1)

  const text = await scrape(app)
  const buckets = samples(text, 'http_request_duration_seconds_bucket').filter((s) => s.labels.route === LIST && s.labels.method === 'GET')
  t.ok(buckets.length >= 5, 'several buckets')
  t.same(buckets.map((b) => b.value), [...buckets.map((b) => b.value)].sort((a, b) => a - b), 'buckets are cumulative')
})

t.test('unknown paths do not become labels', async (t) => {
  const probe = `/no-such-path-${randomBytes(6).toString('hex')}`
  const res = await app.inject({ url: probe })
  t.equal(res.statusCode, 404)
  const text = await scrape(app)
  t.notMatch(text, probe.slice(1), 'the path is not in any label')
  t.ok(value(text, 'http_requests_total', { status: '404' }) >= 1, 'but the 404 is counted')
})

t.test('authentication failures are counted by cause', async (t) => {
  const unknownKey = `sk_${randomBytes(32).toString('base64url')}`
  const cases: Array<[string, Record<string, string>]> = [
    ['unknown', { 'x-api-key': unknownKey }],
    ['malformed', { 'x-api-key': 'not-a-key' }],
    ['missing', {}]
  ]
  for (const [cause, headers] of cases) {
    const [failures, unauthorized] = await delta(app, async () => {
      const res = await app.inject({ url: LIST, headers, remoteAddress: uniqueIp() })
      t.equal(res.statusCode, 401)
    }, [['storefront_auth_failures_total', { cause }], ['http_requests_total', { route: LIST, status: '401' }]])
    t.equal(failures, 1, `storefront_auth_failures_total{cause="${cause}"} + 1`)
    t.equal(unauthorized, 1, 'and a 401 in http_requests_total')
  }
  const { key } = await makeKey(app, ['orders:list'])
  const [anyFailure] = await delta(app, async () => {
    t.equal((await app.inject({ url: LIST, headers: authHeaders(key) })).statusCode, 403)
  }, [['storefront_auth_failures_total']])
  t.equal(anyFailure, 0, 'a valid key without the scope is not an authentication failure')
})

t.test('a 429 increments storefront_rate_limited_total', async (t) => {
  const { key } = await makeKey(app, ['products:list'], { rateLimit: 1 })
  const [limited, http429] = await delta(app, async () => {
    t.equal((await app.inject({ url: LIST, headers: authHeaders(key) })).statusCode, 200)
    t.equal((await app.inject({ url: LIST, headers: authHeaders(key) })).statusCode, 429)
  }, [['storefront_rate_limited_total'], ['http_requests_total', { route: LIST, status: '429' }]])
  t.equal(limited, 1)
  t.equal(http429, 1)
})

t.test('orders created and idempotent replays are counted', async (t) => {
  const { key } = await makeKey(app, ['orders:create'])
  const post = (idempotencyKey = `metrics-${randomBytes(4).toString('hex')}`) => app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...authHeaders(key), 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    payload: { customerName: 'Metrics', customerPhone: '+14155550123', items: [{ productId: product.id }] }
  })
  const idempotencyKey = 'metrics-replayed'
  t.equal((await post(idempotencyKey)).statusCode, 201)

  const [created, replays] = await delta(app, async () => {
    t.equal((await post()).statusCode, 201)
  }, [['storefront_orders_created_total'], ['storefront_idempotent_replays_total']])
  t.equal(created, 1, 'an order created: storefront_orders_created_total + 1')
  t.equal(replays, 0)

  const [createdAgain, replayed] = await delta(app, async () => {
    const res = await post(idempotencyKey)
    t.equal(res.statusCode, 201)
    t.equal(res.headers['idempotent-replayed'], 'true')
  }, [['storefront_orders_created_total'], ['storefront_idempotent_replays_total']])
  t.equal(replayed, 1, 'a replay: storefront_idempotent_replays_total + 1')
  t.equal(createdAgain, 0, 'and no order counted')

  const [failed] = await delta(app, async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/external/v1/orders',
      headers: { ...authHeaders(key), 'content-type': 'application/json' },
      payload: { customerName: 'Metrics', customerPhone: '+14155550123', items: [{ productId: product.id, quantity: 1000 }] }
    })
    t.equal(res.statusCode, 400, 'not enough stock')
  }, [['storefront_orders_created_total']])
  t.equal(failed, 0, 'a refused order is not counted')
})

t.test('storefront_db_pool_connections shows the pool', async (t) => {
  const text = await scrape(app)
  const pool = Object.fromEntries(samples(text, 'storefront_db_pool_connections').map((s) => [s.labels.state, s.value]))
  t.same(Object.keys(pool).sort(), ['active', 'max', 'open'])
  t.ok(pool.max! >= 1, `max ${pool.max}`)
  t.ok(pool.open! >= 1 && pool.open! <= pool.max!, `open ${pool.open}`)
  t.ok(pool.active! >= 0 && pool.active! <= pool.open!, `active ${pool.active}`)
})

t.test('two apps in one process keep their own counts', async (t) => {
  const other = await buildTestApp(t, { database: app.database })
  const [mine, theirs] = await Promise.all([scrape(app), scrape(other)])
  t.ok(value(mine, 'http_requests_total') > value(theirs, 'http_requests_total'), 'the second app starts from its own zero')
})

// ---------------------------------------------------------------------------------------
// /readyz and Redis

async function readyz (t: T, app: App, expected: number, what: string) {
  const started = performance.now()
  const res = await app.inject({ url: '/readyz' })
  const ms = Math.round(performance.now() - started)
  t.equal(res.statusCode, expected, `${what}: /readyz ${expected}`)
  t.ok(ms < 2000, `${what}: answered in ${ms} ms`)
  return res
}

t.test('/readyz reports an unreachable Redis but stays ready (limits count per instance)', async (t) => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: 9 })
  proxy.cut()
  t.teardown(() => proxy.close())
  const withRedis = await buildTestApp(t, { database: app.database, env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}` } })
  const res = await readyz(t, withRedis, 200, 'Redis unreachable')
  t.same(res.json(), { status: 'ready', redis: 'unavailable' })
  t.equal((await withRedis.inject({ url: '/healthz' })).statusCode, 200, '/healthz still 200')

  const withoutRedis = await buildTestApp(t, { database: app.database })
  t.same((await readyz(t, withoutRedis, 200, 'no REDIS_URL')).json(), { status: 'ready', redis: 'not configured' })
})

t.test('/readyz follows Redis through a cut and back', REDIS_URL ? {} : { skip: 'needs TEST_REDIS_URL' }, async (t) => {
  const target = new URL(REDIS_URL!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) })
  t.teardown(() => proxy.close())
  const withRedis = await buildTestApp(t, { database: app.database, env: { REDIS_URL: proxy.urlFor(REDIS_URL!) } })
  t.match((await readyz(t, withRedis, 200, 'Redis up')).json(), { redis: 'ok' })
  proxy.cut()
  // ioredis notices the cut connection within moments.
  const cutDeadline = Date.now() + 5_000
  while ((await withRedis.inject({ url: '/readyz' })).json().redis !== 'unavailable' && Date.now() < cutDeadline) await sleep(100)
  t.match((await readyz(t, withRedis, 200, 'Redis cut')).json(), { redis: 'unavailable' })
  await proxy.restore()
  // ioredis reconnects in the background (its retry delay is at most 2 s).
  const deadline = Date.now() + 15_000
  while ((await withRedis.inject({ url: '/readyz' })).json().redis !== 'ok' && Date.now() < deadline) await sleep(200)
  t.match((await readyz(t, withRedis, 200, 'Redis back')).json(), { redis: 'ok' })
})
