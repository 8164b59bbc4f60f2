// Database outages: the app reaches PostgreSQL through a TCP proxy that a
// test cuts. Requests that need the database answer 503 service_unavailable quickly, /readyz
// fails while /healthz does not, the app recovers by itself, and no order is ever half made.
import { isDriverSocketFault } from '../../lib/database-failure.ts'
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import { createApiKey } from '../../db/api-keys.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { checkCatalog } from '../../lib/catalog-file.ts'
import { SCOPES } from '../../lib/api-key-secret.ts'
import {
  authHeaders, buildTestApp, createTestDatabase, expectError, importProducts, line, makeKey, makeProduct, orderBody, sleep, usingPostgres, type Answer
} from '../helper.ts'
import { startServer } from '../server-process.ts'
import { startTcpProxy, type TcpProxy } from '../tcp-proxy.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const needsPostgres = usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL' }
/** How long a request may take to fail while the database is unreachable. */
const FAIL_FAST_MS = 6000
const RECOVERY_MS = 15_000
const root = new URL('../..', import.meta.url).pathname

// Each test waits out an outage and its recovery: about two minutes in all, more than the
// default limit of a test file.
t.setTimeout(300_000)

// postgres.js 3.4.9 can throw or reject outside any caller when a connection dies at the
// wrong moment: the array-types query of a new connection is never awaited
// (porsager/postgres#1192, #1223) and a deferred write runs on a socket already gone
// (#1154, #1208). In `storefront serve` either one makes close-with-grace shut the process
// down. They are recorded here and checked by the last test, so the tests above still show
// what they are about instead of tap aborting the file on the first one.
const escaped: Array<{ kind: string, error: unknown, test: string }> = []
let current = ''
for (const kind of ['unhandledRejection', 'uncaughtException'] as const) {
  process.removeAllListeners(kind)
  process.on(kind, (error: unknown) => { escaped.push({ kind, error, test: current }) })
}

interface Rig {
  app: App
  /** The same database, reached directly: what really is in it, whatever the proxy does. */
  direct: Database
  proxy: TcpProxy
  key: string
}

async function rig (t: T): Promise<Rig> {
  current = t.name
  const { database: direct, url } = await createTestDatabase(t)
  const target = new URL(url!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const proxied = await openDatabase({ url: proxy.urlFor(url!), poolSize: 5 })
  const app = await buildTestApp(t, { database: proxied, env: { RATE_LIMIT_MAX: '100000' } })
  t.teardown(async () => {
    await proxy.restore()
    await app.close()
    await proxied.close()
    await proxy.close()
  })
  const { key } = await makeKey(app)
  return { app, direct, proxy, key }
}

function checkUnavailable (t: T, res: Answer, what: string) {
  const body = expectError(t, res, 503, 'service_unavailable', { what })
  t.notMatch(JSON.stringify(body), /ECONN|CONNECTION_|postgres|select /i, `${what}: nothing from the inside`)
}

async function timed<R> (fn: () => Promise<R>): Promise<{ res: R, ms: number }> {
  const started = performance.now()
  const res = await fn()
  return { res, ms: Math.round(performance.now() - started) }
}

const NO_ANSWER = { statusCode: 0, headers: {}, json: () => ({}) } as unknown as LightMyRequestResponse

/** app.inject, but gives up after `ms` (statusCode 0): a hung request must not hang the test. */
async function injectWithin (app: App, options: InjectOptions, ms: number): Promise<LightMyRequestResponse> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<LightMyRequestResponse>((resolve) => { timer = setTimeout(() => resolve(NO_ANSWER), ms) })
  try {
    return await Promise.race([app.inject(options), late])
  } finally {
    clearTimeout(timer)
  }
}

/** A GET over a real socket that gives up after `ms`; status 0 means no answer in time. */
async function getWithin (url: string, headers: Record<string, string>, ms: number): Promise<{ status: number, body: unknown }> {
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(ms) })
    return { status: res.status, body: await res.json() as unknown }
  } catch (err) {
    return { status: 0, body: String(err) }
  }
}

/** Repeats `fn` until `done` holds of its result, for at most `ms`; returns the last result. */
async function poll<R> (fn: () => Promise<R>, done: (r: R) => boolean, ms = RECOVERY_MS): Promise<R> {
  const deadline = Date.now() + ms
  for (;;) {
    const r = await fn()
    if (done(r) || Date.now() > deadline) return r
    await sleep(200)
  }
}

async function counts (database: Database, productId: string) {
  const [row] = await execute<{ orders: number, items: number, idempotency: number, quantity: number }>(database.db, sql`
    select (select count(*)::int from orders) as orders,
           (select count(*)::int from order_items) as items,
           (select count(*)::int from idempotency_keys) as idempotency,
           (select quantity from products where id = ${productId}) as quantity`)
  return row!
}

function orderJson (product: { id: string }, quantity = 1) {
  return JSON.stringify(orderBody([line(product, quantity)]))
}

t.test('database cut: reads answer 503 quickly, /readyz fails, /healthz does not, and the app recovers alone', needsPostgres, async (t) => {
  const { app, proxy, key } = await rig(t)
  const unknown = `/external/v1/products/${randomUUID()}`
  const get = (url: string, headers: Record<string, string> = authHeaders(key)) => timed(() => injectWithin(app, { url, headers }, FAIL_FAST_MS + 2000))
  t.equal((await app.inject({ url: unknown, headers: authHeaders(key) })).statusCode, 404, 'before the cut: 404 product_not_found')
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'before the cut: ready')

  proxy.cut()
  const read = await get(unknown)
  checkUnavailable(t, read.res, 'a product that needs the database')
  t.ok(read.ms < FAIL_FAST_MS, `answered in ${read.ms} ms (< ${FAIL_FAST_MS})`)
  const list = await get(`/external/v1/products?query=${randomUUID()}`)
  checkUnavailable(t, list.res, 'a list never read before')
  t.ok(list.ms < FAIL_FAST_MS, `answered in ${list.ms} ms`)
  checkUnavailable(t, (await get('/external/v1/orders')).res, 'the order list')
  const ready = await get('/readyz', {})
  checkUnavailable(t, ready.res, '/readyz')
  t.ok(ready.ms < FAIL_FAST_MS, `/readyz answered in ${ready.ms} ms`)
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, '/healthz: the process is still up')

  // An outage of several seconds, with traffic: past the key cache (authentication then
  // needs the database too) and past the driver's first few reconnection attempts, whose
  // delays grow (a real outage lasts seconds to minutes).
  const slow: string[] = []
  const statuses = new Set<number>()
  const outageEnds = Date.now() + 12_000
  while (Date.now() < outageEnds) {
    const res = await get(`/external/v1/products/${randomUUID()}`)
    statuses.add(res.res.statusCode)
    if (res.ms >= FAIL_FAST_MS || res.res.statusCode !== 503) slow.push(`${res.res.statusCode || 'no answer'} after ${res.ms} ms`)
    await sleep(400)
  }
  t.same([...statuses], [503], 'every request during the outage answers 503')
  t.same(slow, [], `every request during a 12 s outage answers within ${FAIL_FAST_MS} ms`)

  await proxy.restore()
  const restored = Date.now()
  const back = await poll(() => injectWithin(app, { url: unknown, headers: authHeaders(key) }, 5000), (r) => r.statusCode !== 503 && r.statusCode !== 0)
  t.equal(back.statusCode, 404, `after restore the same request answers normally, without a restart (${Date.now() - restored} ms)`)
  t.match(back.json(), { error: 'product_not_found' })
  t.equal((await injectWithin(app, { url: '/readyz' }, 5000)).statusCode, 200, 'ready again')
  // Every connection of the pool is used again, none left broken by the outage.
  const after = await Promise.all(Array.from({ length: 10 }, () =>
    injectWithin(app, { url: `/external/v1/products?query=${randomUUID()}`, headers: authHeaders(key) }, 5000)))
  t.same(after.map((r) => r.statusCode), Array(10).fill(200), 'ten concurrent reads after recovery all answer 200 within 5 s')
})

t.test('database cut during create order: 503, and no partial order afterwards', needsPostgres, async (t) => {
  const { app, direct, proxy, key } = await rig(t)
  const product = makeProduct({ quantity: 10 })
  await importProducts(app, [product])
  const post = (body: string, headers: Record<string, string> = {}) => injectWithin(app, {
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...authHeaders(key), 'content-type': 'application/json', ...headers },
    payload: body
  }, FAIL_FAST_MS + 2000)

  proxy.cut()
  const during = await timed(() => post(orderJson(product, 2), { 'idempotency-key': 'outage-1' }))
  checkUnavailable(t, during.res, 'create order while the database is cut')
  t.ok(during.ms < FAIL_FAST_MS, `answered in ${during.ms} ms`)

  await proxy.restore()
  t.equal((await poll(() => injectWithin(app, { url: '/readyz' }, 5000), (r) => r.statusCode === 200)).statusCode, 200, 'ready again')
  t.same(await counts(direct, product.id), { orders: 0, items: 0, idempotency: 0, quantity: 10 }, 'nothing was written, no stock taken')

  // The integrator retries with the same Idempotency-Key: one order, made now.
  const retried = await post(orderJson(product, 2), { 'idempotency-key': 'outage-1' })
  t.equal(retried.statusCode, 201, 'the retry creates the order')
  t.notOk(retried.headers['idempotent-replayed'], 'not a replay: nothing had been stored')
  t.same(await counts(direct, product.id), { orders: 1, items: 1, idempotency: 1, quantity: 8 })
})

t.test('database cut while orders are being written: every order is whole, and retries make each exactly once', needsPostgres, async (t) => {
  const { app, direct, proxy, key } = await rig(t)
  const product = makeProduct({ quantity: 1000 })
  await importProducts(app, [product])
  const N = 20
  const post = (i: number) => injectWithin(app, {
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...authHeaders(key), 'content-type': 'application/json', 'idempotency-key': `cut-${i}` },
    payload: orderJson(product, 1)
  }, FAIL_FAST_MS + 2000)

  // Cut as soon as the first order is made, while the pool (5 connections) still works
  // through the others: some are mid-transaction, some waiting for a connection.
  let isCut = false
  const results = await Promise.all(Array.from({ length: N }, (_, i) => post(i).then((res) => {
    if (res.statusCode === 201 && !isCut) {
      isCut = true
      proxy.cut()
    }
    return res
  })))
  t.ok(isCut, 'the cut happened while orders were being written')
  const statuses = results.map((r) => r.statusCode)
  t.ok(statuses.every((s) => s === 201 || s === 503), `each answers 201 or 503: ${statuses.join(' ')}`)
  for (const r of results.filter((r) => r.statusCode === 503)) t.match(r.json(), { error: 'service_unavailable' })

  await proxy.restore()
  await poll(() => injectWithin(app, { url: '/readyz' }, 5000), (r) => r.statusCode === 200)
  const made = statuses.filter((s) => s === 201).length
  const afterCut = await counts(direct, product.id)
  t.equal(afterCut.items, afterCut.orders, 'every order has its one line: nothing half made')
  t.equal(afterCut.quantity, 1000 - afterCut.orders, 'stock taken for exactly the orders that exist')
  t.equal(afterCut.idempotency, afterCut.orders, 'an idempotency record for exactly the orders that exist')
  // A commit whose acknowledgement the cut swallowed is an order the client saw as 503.
  t.ok(afterCut.orders >= made, `orders in the database (${afterCut.orders}) include every 201 (${made})`)

  // Integrators retry what failed with the same Idempotency-Key.
  const retries: number[] = []
  for (let i = 0; i < N; i++) {
    if (results[i]!.statusCode !== 201) retries.push((await post(i)).statusCode)
  }
  t.ok(retries.every((s) => s === 201), `every retry answers 201: ${retries.join(' ')}`)
  t.same(await counts(direct, product.id), { orders: N, items: N, idempotency: N, quantity: 1000 - N }, 'exactly one order per Idempotency-Key')
})

t.test('database behind a proxy that accepts and closes: requests still fail quickly', needsPostgres, async (t) => {
  // What a pooler or a cloud SQL proxy does when the server behind it is down: the TCP
  // connection opens, then closes cleanly before PostgreSQL's startup completes.
  const { app, proxy, key } = await rig(t)
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'before the cut')

  proxy.cut('close')
  const [read, ready] = await Promise.all([
    timed(() => injectWithin(app, { url: `/external/v1/products/${randomUUID()}`, headers: authHeaders(key) }, FAIL_FAST_MS + 1000)),
    timed(() => injectWithin(app, { url: '/readyz' }, FAIL_FAST_MS + 1000))
  ])
  for (const [what, r] of [['a product never read', read], ['/readyz', ready]] as const) {
    t.equal(r.res.statusCode, 503, `${what}: 503 (got ${r.res.statusCode || 'no answer'} after ${r.ms} ms)`)
    t.ok(r.ms < FAIL_FAST_MS, `${what}: within ${FAIL_FAST_MS} ms (took ${r.ms} ms)`)
  }

  await proxy.restore()
  const back = await poll(() => injectWithin(app, { url: '/readyz' }, 5000), (r) => r.statusCode === 200)
  t.equal(back.statusCode, 200, 'ready again once the server is back')
})

t.test('database stalled (packets black-holed): requests still fail within a bounded time', needsPostgres, async (t) => {
  const { app, proxy, key } = await rig(t)
  t.equal((await app.inject({ url: `/external/v1/products/${randomUUID()}`, headers: authHeaders(key) })).statusCode, 404, 'before the stall')

  proxy.stall()
  // statement_timeout (10 s) is enforced by the server, which never sees the query here:
  // only a bound on the client's side can answer. Allow that bound plus a margin.
  const bound = 12_000
  const [read, ready] = await Promise.all([
    timed(() => injectWithin(app, { url: `/external/v1/products/${randomUUID()}`, headers: authHeaders(key) }, bound + 1000)),
    timed(() => injectWithin(app, { url: '/readyz' }, bound + 1000))
  ])
  for (const [what, r] of [['a product never read', read], ['/readyz', ready]] as const) {
    t.equal(r.res.statusCode, 503, `${what}: 503 (got ${r.res.statusCode || 'no answer'} after ${r.ms} ms)`)
    t.ok(r.ms < bound, `${what}: within ${bound} ms (took ${r.ms} ms)`)
  }

  await proxy.restore()
  const back = await poll(() => injectWithin(app, { url: `/external/v1/products/${randomUUID()}`, headers: authHeaders(key) }, 5000), (r) => r.statusCode === 404)
  t.equal(back.statusCode, 404, 'answers normally once the network is back')
})

t.test('the real server process lives through database outages under load', needsPostgres, async (t) => {
  current = t.name
  const { database: direct, url } = await createTestDatabase(t)
  const target = new URL(url!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  t.teardown(() => proxy.close())
  const { key } = await createApiKey(direct.db, { name: 'outage', scopes: [...SCOPES] })
  const stocked = makeProduct({ quantity: null })
  await importCatalog(direct, checkCatalog({ products: [stocked] }))
  const server = await startServer(root, { DATABASE_URL: proxy.urlFor(url!), LOG_LEVEL: 'warn' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const alive = () => server.child.exitCode === null
  const product = () => getWithin(`${server.base}/external/v1/products/${randomUUID()}`, authHeaders(key), FAIL_FAST_MS + 1000)
  const order = async () => {
    try {
      const res = await fetch(`${server.base}/external/v1/orders`, {
        method: 'POST',
        headers: { ...authHeaders(key), 'content-type': 'application/json' },
        body: orderJson(stocked),
        signal: AbortSignal.timeout(FAIL_FAST_MS + 1000)
      })
      await res.arrayBuffer()
      return { status: res.status }
    } catch {
      return { status: 0 }
    }
  }
  t.equal((await product()).status, 404, 'serving before the cut')

  // Eight clients keep reading and ordering while the database goes away and comes back, twice.
  const answers = new Map<number | string, number>()
  const loading = { on: true }
  const workers = Array.from({ length: 8 }, async (_, i) => {
    while (loading.on && alive()) {
      const status = (await (i % 2 === 0 ? product() : order())).status || 'no answer'
      answers.set(status, (answers.get(status) ?? 0) + 1)
    }
  })
  for (let cycle = 0; cycle < 2 && alive(); cycle++) {
    await sleep(700)
    proxy.cut()
    await sleep(1500)
    await proxy.restore()
  }
  loading.on = false
  await Promise.all(workers)
  const back = alive() ? await poll(product, (r) => r.status === 404 || !alive()) : { status: 0 }
  const seen = [...answers].map(([status, n]) => `${status}×${n}`).join(', ')
  t.ok(alive(), `the process is still running after the outages (answers: ${seen})`)
  t.equal(back.status, 404, 'and serves again without a restart')
  if (!alive()) t.comment(`exit code ${server.child.exitCode}; server output:\n${server.output().slice(-1500)}`)
})

t.test('no error escaped the request that met the outage, but the driver\'s known socket fault', needsPostgres, async (t) => {
  await sleep(500)
  // postgres.js 3.4 throws this TypeError from a timer while connections drop
  // (porsager/postgres#1154); `storefront serve` logs it and goes on (server.ts), as the
  // real-process test above proves. Anything else escaping is a bug of ours.
  const seen = escaped.filter(({ error }) => !isDriverSocketFault(error)).map(({ kind, error, test }) => {
    const e = error as { code?: string, message?: string, query?: string, stack?: string }
    const where = e.query ? ` (query: ${e.query.replace(/\s+/g, ' ').trim().slice(0, 60)})` : /at (\S+) \(([^)]*node_modules\/postgres[^)]*)\)/.exec(e.stack ?? '')?.slice(1, 3).join(' ') ?? ''
    return `${kind} in "${test}": ${e.code ?? ''} ${e.message ?? String(error)} ${where}`.trim()
  })
  t.same(seen, [], 'any other uncaught exception or unhandled rejection would make `storefront serve` shut down')
})
