// Webhook deliveries across instances, restarts and outages (decisions §11, "never lost"):
// two instances on one database attempt each delivery once; an instance killed mid-attempt
// leaves its delivery to another once the lease ends; closing (SIGTERM) finishes or gives
// back what is in flight; a database outage delays deliveries and loses none. Separate
// processes and the outage need PostgreSQL; the two in-process instances and the shutdown run
// on PGlite too.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../app.ts'
import { execute, openDatabase, type Database } from '../../../db/client.ts'
import { recordEvents } from '../../../db/events.ts'
import { SCOPES, type Scope } from '../../../lib/api-key-secret.ts'
import { isDriverSocketFault } from '../../../lib/database-failure.ts'
import { authHeaders, buildTestApp, createTestDatabase, makeKey, sleep, until, usingPostgres } from '../../helper.ts'
import { startServer } from '../../server-process.ts'
import { startTcpProxy } from '../../tcp-proxy.ts'
import { startReceiver, WEBHOOK_TEST_ENV } from '../../webhook-receiver.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

t.setTimeout(300_000)
const needsPostgres = usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL (separate processes, a real outage)' }
const root = new URL('../../..', import.meta.url).pathname

// postgres.js can reject outside any caller when a connection dies (see test/server/outages.test.ts):
// the driver's known socket fault is allowed, anything else fails the last test.
const escaped: unknown[] = []
for (const kind of ['unhandledRejection', 'uncaughtException'] as const) {
  process.removeAllListeners(kind)
  process.on(kind, (error: unknown) => { escaped.push(error) })
}

const ENV = {
  ...WEBHOOK_TEST_ENV,
  WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2'
}
const everyScope = [...SCOPES] as Scope[]

async function createEndpoint (app: App, key: string, url: string): Promise<{ id: string, secret: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/webhooks',
    headers: { ...authHeaders(key), 'content-type': 'application/json' },
    payload: JSON.stringify({ url, events: ['product.*'] })
  })
  if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`)
  return res.json()
}

async function writeEvents (database: Database, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => crypto.randomUUID())
  await recordEvents(database.db, ids.map((resourceId) => ({ type: 'product.updated' as const, resourceId })))
  return ids
}

async function deliveryRows (database: Database, endpointId: string) {
  return execute<{ position: number, status: string, attempts: number, lease_until: string | null, due: boolean }>(database.db, sql`
    select position::int, status, attempts, lease_until::text, (next_attempt_at <= now()) as due
    from webhook_deliveries where endpoint_id = ${endpointId}::uuid order by position`)
}

/** An instance's count of successful delivery attempts, from its /metrics text. */
const succeededIn = (metrics: string) => Number(/storefront_webhook_attempts_total\{outcome="succeeded"\} (\d+)/.exec(metrics)?.[1] ?? 0)

/** One test database opened twice, as two instances would (PGlite: the one in-process database, shared). */
async function twoConnections (t: T): Promise<{ first: Database, second: Database }> {
  const { database: first, url } = await createTestDatabase(t, { poolSize: 8 })
  if (url === undefined) return { first, second: first }
  const second = await openDatabase({ url, poolSize: 8 })
  t.teardown(() => second.close())
  return { first, second }
}

t.test('two instances on one database: each event is delivered exactly once when the receiver succeeds', async (t: T) => {
  const { first, second } = await twoConnections(t)
  // Small batches, so both instances keep claiming at once.
  const a = await buildTestApp(t, { database: first, env: { ...ENV, WEBHOOK_CONCURRENCY: '4' } })
  const b = await buildTestApp(t, { database: second, env: { ...ENV, WEBHOOK_CONCURRENCY: '4', WEBHOOK_POLL_MS: '13' } })
  await Promise.all([a.ready(), b.ready()])
  const { key } = await makeKey(a, everyScope)
  const receivers = [await startReceiver(t), await startReceiver(t)]
  // Slow enough that attempts overlap across instances.
  for (const r of receivers) r.respond(async (_req, res) => { await sleep(5); res.writeHead(200).end() })
  await Promise.all(receivers.map((r) => createEndpoint(a, key, r.url)))
  const EVENTS = usingPostgres ? 120 : 40
  for (let i = 0; i < EVENTS; i += 10) await writeEvents(i % 20 === 0 ? first : second, 10)
  for (const r of receivers) await r.waitFor(EVENTS, 60_000)
  await sleep(1000)
  for (const [n, r] of receivers.entries()) {
    const perId = new Map<string, number>()
    for (const hit of r.received) perId.set(hit.id, (perId.get(hit.id) ?? 0) + 1)
    t.equal(perId.size, EVENTS, `receiver ${n + 1}: every event`)
    t.same([...perId.values()].filter((c) => c !== 1), [], `receiver ${n + 1}: each exactly once`)
  }
  const [row] = await execute<{ succeeded: number, attempts: number }>(first.db, sql`
    select count(*) filter (where status = 'succeeded')::int as succeeded, sum(attempts)::int as attempts from webhook_deliveries`)
  t.same(row, { succeeded: EVENTS * 2, attempts: EVENTS * 2 }, 'every delivery succeeded at its first attempt')
  const served = (await a.inject({ url: '/metrics' })).body
  const servedB = (await b.inject({ url: '/metrics' })).body
  t.equal(succeededIn(served) + succeededIn(servedB), EVENTS * 2, 'the two instances\' attempt counters add up to the deliveries')
  if (usingPostgres) t.ok(succeededIn(served) > 0 && succeededIn(servedB) > 0, `both instances delivered (${succeededIn(served)} and ${succeededIn(servedB)})`)
  t.match(served, /storefront_webhook_oldest_due_seconds 0/, 'nothing is waiting')
})

t.test('an instance with WEBHOOK_DELIVERY=false queues what it publishes and attempts none; an instance that delivers does', async (t: T) => {
  const { first, second } = await twoConnections(t)
  const api = await buildTestApp(t, { database: first, env: { ...ENV, WEBHOOK_DELIVERY: 'false', WEBHOOK_POLL_MS: '13' } })
  await api.ready()
  t.notOk(api.background.names.includes('webhook worker'), 'no delivery worker among its background work')
  const { key } = await makeKey(api, everyScope)
  const receiver = await startReceiver(t)
  const endpoint = await createEndpoint(api, key, receiver.url)
  const EVENTS = 5
  await writeEvents(first, EVENTS)
  // Its publisher queues the deliveries (and would wake a worker that ran).
  await until('the events published, their deliveries queued', async () => (await deliveryRows(first, endpoint.id)).length === EVENTS ? true : undefined)
  await sleep(300)
  const untouched = (await deliveryRows(first, endpoint.id)).map((r) => ({ status: r.status, attempts: r.attempts, lease: r.lease_until }))
  t.same(untouched, Array.from({ length: EVENTS }, () => ({ status: 'pending', attempts: 0, lease: null })), 'none claimed nor attempted, many polls and publications later')
  t.equal(receiver.received.length, 0, 'nothing reached the receiver')
  const delivering = await buildTestApp(t, { database: second, env: ENV })
  await delivering.ready()
  await receiver.waitFor(EVENTS, 30_000)
  await until('the outcomes recorded', async () => (await deliveryRows(first, endpoint.id)).every((r) => r.status === 'succeeded') ? true : undefined)
  t.equal(new Set(receiver.received.map((r) => r.id)).size, EVENTS, 'the delivering instance delivered each event')
  const succeeded = async (app: App) => succeededIn((await app.inject({ url: '/metrics' })).body)
  t.same([await succeeded(api), await succeeded(delivering)], [0, EVENTS], 'all of them attempted by the delivering instance')
})

t.test('two instances with failures and retries: one attempt is never made twice at once, and each is recorded once', async (t: T) => {
  const { first, second } = await twoConnections(t)
  const env = { ...ENV, WEBHOOK_CONCURRENCY: '8', WEBHOOK_RETRY_SCHEDULE: '0.05,0.05,0.05' }
  const a = await buildTestApp(t, { database: first, env })
  const b = await buildTestApp(t, { database: second, env: { ...env, WEBHOOK_POLL_MS: '13' } })
  await Promise.all([a.ready(), b.ready()])
  const { key } = await makeKey(a, everyScope)
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  const inFlight = new Map<string, number>()
  const attempts = new Map<string, number>()
  let overlaps = 0
  // Each event fails twice (slowly, so attempts would overlap if two instances held one), then succeeds.
  receiver.respond(async (req, res) => {
    const now = (inFlight.get(req.id) ?? 0) + 1
    if (now > 1) overlaps++
    inFlight.set(req.id, now)
    const n = (attempts.get(req.id) ?? 0) + 1
    attempts.set(req.id, n)
    await sleep(10)
    inFlight.set(req.id, inFlight.get(req.id)! - 1)
    res.writeHead(n <= 2 ? 500 : 204).end()
  })
  const endpoint = await createEndpoint(a, key, receiver.url)
  const EVENTS = usingPostgres ? 60 : 20
  for (let i = 0; i < EVENTS; i += 10) await writeEvents(i % 20 === 0 ? first : second, 10)
  await until('every delivery to succeed', async () => {
    const rows = await deliveryRows(first, endpoint.id)
    return rows.length === EVENTS && rows.every((r) => r.status === 'succeeded') ? rows : undefined
  }, 60_000)
  await sleep(300)
  t.equal(overlaps, 0, 'no attempt of an event overlapped another of the same event')
  t.same([...attempts.values()].filter((n) => n !== 3), [], 'each event: two failures, then one success')
  const rows = await deliveryRows(first, endpoint.id)
  t.same(rows.filter((r) => r.attempts !== 3), [], 'each attempt recorded once: 3 a delivery')
})

t.test('deleting an endpoint while its deliveries are being recorded never fails', async (t: T) => {
  const app = await buildTestApp(t, { env: { ...ENV, WEBHOOK_CONCURRENCY: '32' } })
  await app.ready()
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const answers: number[] = []
  for (let round = 0; round < 12; round++) {
    const endpoint = await createEndpoint(app, key, receiver.url)
    const before = receiver.received.length
    await writeEvents(app.database, 30)
    await until('deliveries under way', () => receiver.received.length >= before + 3 ? true : undefined)
    const res = await app.inject({ method: 'DELETE', url: `/external/v1/webhooks/${endpoint.id}`, headers: authHeaders(key) })
    answers.push(res.statusCode)
    const [left] = await execute<{ count: number }>(app.database.db, sql`select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid`)
    t.equal(left!.count, 0, `round ${round + 1}: its deliveries are gone`)
  }
  t.same(answers.filter((status) => status !== 204), [], 'every delete answered 204')
})

t.test('closing waits for an attempt in flight and records it', async (t: T) => {
  const app = await buildTestApp(t, { env: { ...ENV, SHUTDOWN_TIMEOUT: '10000' } })
  await app.ready()
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond(async (_req, res) => { await sleep(1500); res.writeHead(200).end() })
  const endpoint = await createEndpoint(app, key, receiver.url)
  await writeEvents(app.database, 1)
  await receiver.waitFor(1)
  const started = Date.now()
  await app.close()
  t.ok(Date.now() - started >= 1000, 'close waited for the receiver')
  const rows = await deliveryRows(app.database, endpoint.id)
  t.match(rows, [{ status: 'succeeded', attempts: 1, lease_until: null }], 'the attempt finished and was recorded')
})

t.test('closing gives back an attempt it cannot finish within the shutdown timeout: not counted, due at once, delivered by the next instance', async (t: T) => {
  const { database } = await createTestDatabase(t)
  const app = await buildTestApp(t, { database, env: { ...ENV, SHUTDOWN_TIMEOUT: '1500' } })
  await app.ready()
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  let hold = true
  receiver.respond(async (_req, res) => {
    if (!hold) {
      res.writeHead(200).end()
      return
    }
    // Never answers: only the sender giving up ends it.
    await new Promise((resolve) => res.once('close', resolve))
  })
  const endpoint = await createEndpoint(app, key, receiver.url)
  await writeEvents(database, 1)
  await receiver.waitFor(1)
  const started = Date.now()
  await app.close()
  const took = Date.now() - started
  t.ok(took < 6000, `close took ${took} ms: bounded by the shutdown timeout`)
  const rows = await deliveryRows(database, endpoint.id)
  t.match(rows, [{ status: 'pending', attempts: 0, lease_until: null, due: true }], 'released: lease cleared, the attempt not counted, due now')

  hold = false
  const next = await buildTestApp(t, { database, env: ENV })
  await next.ready()
  await receiver.waitFor(2)
  t.equal(receiver.received[1]!.id, receiver.received[0]!.id, 'the next instance delivered the same event')
  await until('the success', async () => (await deliveryRows(database, endpoint.id))[0]?.status === 'succeeded' ? true : undefined)
  t.match(await deliveryRows(database, endpoint.id), [{ status: 'succeeded', attempts: 1 }])
})

t.test('closing gives back at once what was claimed but never started', async (t: T) => {
  const { database } = await createTestDatabase(t)
  // One slot: the first delivery is attempted, the next one waits claimed for the slot.
  const app = await buildTestApp(t, { database, env: { ...ENV, WEBHOOK_CONCURRENCY: '1', SHUTDOWN_TIMEOUT: '10000' } })
  await app.ready()
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond(async (_req, res) => { await sleep(1000); res.writeHead(200).end() })
  const endpoint = await createEndpoint(app, key, receiver.url)
  await writeEvents(database, 2)
  await receiver.waitFor(1)
  await until('both claimed', async () => (await deliveryRows(database, endpoint.id)).filter((r) => r.lease_until !== null).length === 2 ? true : undefined)
  await app.close()
  t.equal(receiver.received.length, 1, 'the waiting one was never sent')
  const rows = (await deliveryRows(database, endpoint.id)).sort((x, y) => x.status.localeCompare(y.status))
  t.match(rows, [{ status: 'pending', attempts: 0, lease_until: null, due: true }, { status: 'succeeded', attempts: 1 }], 'the attempt in flight finished; the waiting one was given back, due now')
})

t.test('an instance killed mid-attempt: another delivers within the lease', needsPostgres, async (t: T) => {
  const { database, url } = await createTestDatabase(t)
  // This instance only serves the API until the other is dead: its worker is stopped.
  const api = await buildTestApp(t, { database, env: { ...ENV, WEBHOOK_POLL_MS: '3600000' } })
  const { key } = await makeKey(api, everyScope)
  const receiver = await startReceiver(t)
  let hold = true
  receiver.respond(async (_req, res) => {
    if (!hold) {
      res.writeHead(200).end()
      return
    }
    await new Promise((resolve) => res.once('close', resolve))
  })
  const endpoint = await createEndpoint(api, key, receiver.url)
  // It would claim what it publishes itself: stopped, so only the process delivers.
  await api.webhooks.worker.stop(0)
  const LEASE_MS = 4000
  // HEAP_LIMIT_MB=0: the server runs in the process started, not under a launcher, so the
  // SIGKILL below kills the process that holds the attempt.
  const server = await startServer(root, { ...ENV, STOREFRONT_SOURCE: '1', DATABASE_URL: url!, WEBHOOK_LEASE_MS: String(LEASE_MS), WEBHOOK_TIMEOUT_MS: '3000', LOG_LEVEL: 'error', HEAP_LIMIT_MB: '0' })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  await writeEvents(database, 1)
  await receiver.waitFor(1, 30_000)
  const [claimed] = await deliveryRows(database, endpoint.id)
  t.match(claimed, { status: 'pending', attempts: 0 }, 'held by the instance, not yet counted')
  t.ok(claimed!.lease_until !== null, 'under its lease')
  server.child.kill('SIGKILL')
  await server.exited
  const killedAt = Date.now()

  hold = false
  const other = await buildTestApp(t, { database, env: { ...ENV, WEBHOOK_LEASE_MS: String(LEASE_MS), WEBHOOK_TIMEOUT_MS: '3000' } })
  await other.ready()
  await receiver.waitFor(2, LEASE_MS + 15_000)
  const after = Date.now() - killedAt
  t.equal(receiver.received[1]!.id, receiver.received[0]!.id, 'the same event, by another instance')
  t.ok(after < LEASE_MS + 10_000, `delivered ${after} ms after the kill (lease ${LEASE_MS} ms)`)
  await until('the success', async () => (await deliveryRows(database, endpoint.id))[0]?.status === 'succeeded' ? true : undefined)
  t.match(await deliveryRows(database, endpoint.id), [{ status: 'succeeded', attempts: 1, lease_until: null }], 'the killed attempt never counted')
})

t.test('SIGTERM while an attempt is in flight: the process gives it back before it exits', needsPostgres, async (t: T) => {
  const { database, url } = await createTestDatabase(t)
  const api = await buildTestApp(t, { database, env: { ...ENV, WEBHOOK_POLL_MS: '3600000' } })
  const { key } = await makeKey(api, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond(async (_req, res) => { await new Promise((resolve) => res.once('close', resolve)) })
  const endpoint = await createEndpoint(api, key, receiver.url)
  // Only the process delivers: this instance would claim what it publishes itself.
  await api.webhooks.worker.stop(0)
  const server = await startServer(root, { ...ENV, STOREFRONT_SOURCE: '1', DATABASE_URL: url!, SHUTDOWN_TIMEOUT: '2500', LOG_LEVEL: 'error' })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  await writeEvents(database, 1)
  await receiver.waitFor(1, 30_000)
  server.child.kill('SIGTERM')
  const code = await server.exited
  t.equal(code, 0, 'a clean exit')
  t.match(await deliveryRows(database, endpoint.id), [{ status: 'pending', attempts: 0, lease_until: null, due: true }], 'released, not counted, due at once')
})

t.test('a database outage delays deliveries and loses none', needsPostgres, async (t: T) => {
  const { database: direct, url } = await createTestDatabase(t)
  const target = new URL(url!)
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
  const proxied = await openDatabase({ url: proxy.urlFor(url!), poolSize: 5 })
  const app = await buildTestApp(t, { database: proxied, env: ENV })
  t.teardown(async () => {
    await proxy.restore()
    await app.close()
    await proxied.close()
    await proxy.close()
  })
  await app.ready()
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  // Slow answers: some attempts are in flight when the line is cut.
  receiver.respond(async (_req, res) => { await sleep(300); res.writeHead(200).end() })
  const endpoint = await createEndpoint(app, key, receiver.url)
  const before = await writeEvents(direct, 5)
  await receiver.waitFor(1)
  proxy.cut()
  // Written while the instance cannot reach the database (another instance could).
  const during = await writeEvents(direct, 10)
  await sleep(2000)
  const receivedDuringCut = receiver.received.length
  await proxy.restore()
  const all = [...before, ...during]
  await until('every event to arrive', () => {
    const got = new Set(receiver.received.map((r) => r.json.data.resourceId))
    return all.every((id) => got.has(id)) ? true : undefined
  }, 60_000)
  t.ok(receivedDuringCut < all.length, `delayed: ${receivedDuringCut} of ${all.length} arrived during the cut`)
  await until('every delivery to be recorded', async () => {
    const rows = await deliveryRows(direct, endpoint.id)
    return rows.length === all.length && rows.every((r) => r.status === 'succeeded') ? true : undefined
  }, 60_000)
  t.pass(`all ${all.length} delivered and recorded after the outage`)
})

t.test('nothing escaped but the driver\'s known socket fault', async (t) => {
  t.same(escaped.filter((e) => !isDriverSocketFault(e)).map(String), [])
})
