// Exports over real sockets, with a catalogue larger than what the kernel buffers between a
// client and the server (12,000 products, about 10 MB): a client that stops reading holds the
// server mid-stream, so what a stalled or departed client costs can be seen. Two at once per
// key, a third refused (across instances on PostgreSQL); the instance's own limit; the idle
// disconnect, and a slow client that is not idle; a client that leaves; and, through a TCP
// proxy the test cuts, 503 before the first byte and a cut without the closing line after it;
// through the same proxy, that the app asks for the next rows before it has the first ones.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase } from '../../db/client.ts'
import { BATCH_ROWS, EXPORT_BUSY_RETRY_AFTER_SECONDS, EXPORT_RETRY_AFTER_SECONDS } from '../../services/export.ts'
import { seedPlainProducts, SocketExport } from '../export.ts'
import { authHeaders, buildTestApp, createTestDatabase, expectError, makeKey, sleep, until, UNLIMITED, usingPostgres } from '../helper.ts'
import { startTcpProxy, type TcpProxy } from '../tcp-proxy.ts'

t.setTimeout(180_000)
const PRODUCTS = 12_000
const IDLE_SECONDS = 1

const { database, url: databaseUrl } = await createTestDatabase(t)
await seedPlainProducts(database, PRODUCTS)
const env = { ...UNLIMITED }
const app = await buildTestApp(t, { database, env, contract: false })
await app.listen({ host: '127.0.0.1', port: 0 })
const { key } = await makeKey(app)

const base = (of: App) => `http://127.0.0.1:${(of.server.address() as { port: number }).port}`
const open = (of: App, apiKey = key, path = '/external/v1/products/export') => SocketExport.open(`${base(of)}${path}`, authHeaders(apiKey))

/**
 * Backends of this database waiting in an export's transaction (its snapshot): their last
 * statement opened the export or read its cursor. The app's own short transactions (the
 * publisher, the webhook worker) may be caught between two statements too; they do not count.
 */
async function openTransactions (): Promise<number> {
  if (!usingPostgres) return 0
  const rows = await execute<{ state: string }>(database.db, sql`select state from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'
      and (query like '%export_rows%' or query like '%idle_in_transaction_session_timeout%')`)
  return rows.length
}

/** An instance listening on a port, whose database connections go through a TCP proxy the test controls. */
async function throughProxy (t: Test, instanceEnv: Record<string, string>): Promise<{ proxy: TcpProxy, app: App }> {
  const target = new URL(databaseUrl!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const proxied = await openDatabase({ url: proxy.urlFor(databaseUrl!), poolSize: 4 })
  t.teardown(async () => {
    proxy.releaseReplies()
    await proxy.restore()
    await proxied.close()
    await proxy.close()
  })
  const instance = await buildTestApp(t, { database: proxied, env: instanceEnv, contract: false })
  await instance.listen({ host: '127.0.0.1', port: 0 })
  return { proxy, app: instance }
}

/**
 * Starts an export and reads none of its body: the server is held mid-stream once the
 * kernel's buffers are full (a client that read nothing has not made them grow).
 */
async function held (of: App, apiKey = key): Promise<SocketExport> {
  const reader = await open(of, apiKey)
  t.equal(reader.status, 200)
  return reader
}

t.test('a client that reads everything gets every product and the closing line', async (t) => {
  const reader = await open(app)
  t.equal(await reader.finish(), 'complete')
  t.equal(reader.lines, PRODUCTS + 1)
  t.same(reader.end, { count: PRODUCTS, changesCursor: reader.headers['changes-cursor'] })
})

t.test('two exports at once per key; a third is refused with Retry-After, another key is not', async (t) => {
  const first = await held(app)
  const second = await held(app)
  // Each fills what the kernel buffers, then waits in its transaction, holding its snapshot.
  if (usingPostgres) await until('both to wait for their clients', async () => (await openTransactions()) === 2 ? true : undefined, 10_000)
  const third = await app.inject({ url: '/external/v1/products/export', headers: authHeaders(key) })
  expectError(t, third, 429, 'rate_limit_exceeded', { message: /At most 2 exports at once/ })
  t.equal(third.headers['retry-after'], String(EXPORT_RETRY_AFTER_SECONDS))
  t.equal((await app.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })).statusCode, 429, 'orders and products count together')
  const { key: otherKey } = await makeKey(app)
  const other = await app.inject({ url: '/external/v1/orders/export', headers: authHeaders(otherKey) })
  t.equal(other.statusCode, 200, 'another key exports meanwhile')

  t.equal(await first.finish(), 'complete', 'the first reads on to its end')
  t.equal(first.end?.count, PRODUCTS)
  // The closing line comes after the export's slot is free: the next one starts at once.
  const next = await app.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })
  t.equal(next.statusCode, 200, 'once one has ended (its closing line read), a new export starts')
  second.destroy()
  // The first's slot is free already; both are once the departed client's export has ended.
  await until('the departed client\'s slot to be free', async () => {
    const both = await Promise.all([0, 1].map(() => app.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })))
    return both.every((res) => res.statusCode === 200) ? true : undefined
  }, 10_000)
  t.equal(await openTransactions(), 0, 'and no snapshot is left open')
})

t.test('a client that reads nothing for EXPORT_IDLE_SECONDS is disconnected, without the closing line; its snapshot ends', async (t) => {
  const idle = await buildTestApp(t, { database, env: { ...env, EXPORT_IDLE_SECONDS: String(IDLE_SECONDS) }, contract: false })
  await idle.listen({ host: '127.0.0.1', port: 0 })
  const connections = () => new Promise<number>((resolve, reject) => idle.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
  const stalled = await held(idle)
  const stalledAt = Date.now()
  await until('the server to close the connection', async () => (await connections()) === 0 ? true : undefined, IDLE_SECONDS * 1000 + 15_000)
  t.ok(Date.now() - stalledAt >= IDLE_SECONDS * 1000 - 100, `not before the idle time (${Date.now() - stalledAt} ms)`)
  await until('its snapshot to end', async () => (await openTransactions()) === 0 ? true : undefined, 10_000)
  // A paused client learns of the close once it reads what was buffered before it.
  t.equal(await stalled.finish(), 'cut', 'the connection was closed')
  t.equal(stalled.end, undefined, 'without the closing line')
  t.ok(stalled.lines < PRODUCTS, `after ${stalled.lines} lines`)
  // Slower than the server, but reading: never idle for a whole second (about 10 MB at 3 MB/s).
  const slow = await open(idle)
  const began = Date.now()
  t.equal(await slow.finish({ bytesPerSecond: 3 * 2 ** 20, piece: 32 * 1024 }), 'complete', 'a client reading slowly is not disconnected')
  t.equal(slow.end?.count, PRODUCTS, `every line, in ${Date.now() - began} ms`)
})

t.test('an instance reads at most EXPORT_CONCURRENCY exports at once; one more answers 503 with Retry-After (PostgreSQL)', { skip: usingPostgres ? false : 'PGlite reads an export whole before sending it: it holds the database only that long' }, async (t) => {
  const narrow = await buildTestApp(t, { database, env: { ...env, EXPORT_CONCURRENCY: '1' }, contract: false })
  await narrow.listen({ host: '127.0.0.1', port: 0 })
  const reading = await held(narrow)
  const { key: otherKey } = await makeKey(app)
  const busy = await narrow.inject({ url: '/external/v1/orders/export', headers: authHeaders(otherKey) })
  expectError(t, busy, 503, 'service_unavailable', { message: /most exports at once/ })
  t.equal(busy.headers['retry-after'], String(EXPORT_BUSY_RETRY_AFTER_SECONDS))
  t.equal((await narrow.inject({ url: '/external/v1/products?sku=Bulk-1', headers: authHeaders(otherKey) })).statusCode < 500, true, 'other reads go on')
  t.equal((await app.inject({ url: '/external/v1/orders/export', headers: authHeaders(otherKey) })).statusCode, 200, 'another instance has its own')
  t.equal(await reading.finish(), 'complete')
  t.equal((await narrow.inject({ url: '/external/v1/orders/export', headers: authHeaders(otherKey) })).statusCode, 200, 'once it is read, the next one starts')
})

t.test('two instances share the two slots of a key (PostgreSQL)', { skip: usingPostgres ? false : 'PGlite is one instance' }, async (t) => {
  const secondDatabase = await openDatabase({ url: databaseUrl! })
  t.teardown(() => secondDatabase.close())
  const other = await buildTestApp(t, { database: secondDatabase, env, contract: false })
  await other.listen({ host: '127.0.0.1', port: 0 })
  const first = await held(app)
  const second = await held(other)
  expectError(t, await other.inject({ url: '/external/v1/products/export', headers: authHeaders(key) }), 429, 'rate_limit_exceeded')
  expectError(t, await app.inject({ url: '/external/v1/products/export', headers: authHeaders(key) }), 429, 'rate_limit_exceeded')
  first.destroy()
  second.destroy()
  await until('both slots to be free', async () => (await other.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })).statusCode === 200 ? true : undefined, 10_000)
})

t.test('the database lost: 503 before the first byte; after it, the body ends without the closing line (PostgreSQL)', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  // Keys are trusted from the instance's cache (its longest allowed life) meanwhile, so only the export needs the database.
  const { proxy, app: cut } = await throughProxy(t, { ...env, KEY_CACHE_TTL_MS: '5000' })
  t.equal((await cut.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })).statusCode, 200, 'before the cut')

  proxy.cut()
  const refused = await cut.inject({ url: '/external/v1/products/export', headers: authHeaders(key) })
  expectError(t, refused, 503, 'service_unavailable')
  t.match(refused.headers['retry-after'], /^\d+$/)
  await proxy.restore()

  const reader = await until('an export to start after the restore', async () => {
    const started = await open(cut)
    if (started.status === 200) return started
    started.destroy()
    return undefined
  }, 20_000)
  await reader.take(64 * 1024)
  proxy.cut()
  t.equal(await reader.finish(), 'cut', 'the body is cut short')
  t.equal(reader.end, undefined, 'without the closing line')
  t.ok(reader.lines > 0 && reader.lines < PRODUCTS, `after ${reader.lines} lines`)
  await proxy.restore()
  const recovered = await until('the instance to export again', async () => {
    const res = await cut.inject({ url: '/external/v1/products/export?query=bulk%20000001', headers: authHeaders(key) })
    return res.statusCode === 200 ? res : undefined
  }, 20_000)
  t.match(recovered.body, /"exportEnd":\{"count":1,/)
})

t.test('the next batch is asked for before the first one has arrived (PostgreSQL)', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  const { proxy, app: watched } = await throughProxy(t, env)
  const fetches = () => proxy.sent().match(/fetch forward/gi)?.length ?? 0

  // The database's answers are held from the first FETCH on: what the app asks meanwhile, it
  // asks without having read a row.
  proxy.holdRepliesAfter('fetch forward')
  const reading = open(watched)
  await until('two FETCHes to be sent', () => fetches() >= 2 ? true : undefined, 10_000)
  await sleep(300)
  t.equal(fetches(), 2, 'two batches asked for, and no more before one arrives')

  proxy.releaseReplies()
  const reader = await reading
  t.equal(reader.status, 200)
  t.equal(await reader.finish(), 'complete')
  t.equal(reader.lines, PRODUCTS + 1, 'every product once, and the closing line')
  t.equal(fetches(), Math.floor(PRODUCTS / BATCH_ROWS) + 2, 'the two asked first, and one more for each full batch')
})
