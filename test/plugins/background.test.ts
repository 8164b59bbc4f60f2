// Background work has one owner: every timer and loop starts when the app is ready, and
// closing stops them all, in the order plugins/background.ts states.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { buildApp } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { execute, migrateDatabase, openDatabase, type Database } from '../../db/client.ts'
import { BackgroundWork, every, type BackgroundTask } from '../../plugins/background.ts'
import { ApiKeyCache } from '../../services/api-keys.ts'
import { CatalogCache } from '../../services/catalog-cache.ts'
import { Store } from '../../services/store.ts'
import { WebhookUrlPolicy } from '../../services/webhooks/url-policy.ts'
import { WebhookWorker } from '../../services/webhooks/worker.ts'
import { authHeaders, buildTestApp, createEmptyDatabase, makeKey, sleep, until, usingPostgres, type TestContext } from '../helper.ts'

/** Every task, in the order closing stops them. */
const STOP_ORDER = [
  'webhook worker',
  'event publishing',
  'changes retention',
  'webhook deliveries retention',
  'discount sweep',
  'document backfill',
  'list pages rebuild',
  'reservation expiry',
  'idempotency cleanup',
  'state poll',
  'replica sampling',
  'key last-use flush'
]

type Tally = Record<string, number>

/** The process's active resources by type (Timeout, TCPSocketWrap, …). */
function tally (): Tally {
  const counts: Tally = {}
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1
  return counts
}

/** The tally once it equals `expected`, or the last one seen after `ms` (sockets close a few ticks late, later on a busy machine). */
async function settledTally (expected: Tally, ms = 30_000): Promise<Tally> {
  const deadline = Date.now() + ms
  for (;;) {
    const now = tally()
    if (JSON.stringify(Object.entries(now).sort()) === JSON.stringify(Object.entries(expected).sort()) || Date.now() > deadline) return now
    await sleep(20)
  }
}

/**
 * A database the test opens after its first tally and closes before the last, so what is
 * left is what the app left: a fresh PostgreSQL database (the server's admin connection, opened
 * before, stays open till teardown and is in both tallies) or a fresh PGlite.
 */
async function ownDatabase (t: TestContext): Promise<() => Promise<Database>> {
  const adminUrl = process.env.TEST_DATABASE_URL
  const url = adminUrl === undefined ? undefined : await createEmptyDatabase(t, 'sf_test', adminUrl)
  return async () => {
    const database = await openDatabase({ url })
    await migrateDatabase(database, url)
    return database
  }
}

t.test(`an app closed right after ready leaves no timer or socket behind (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, async (t) => {
  const open = await ownDatabase(t)
  const before = tally()
  const database = await open()
  const app = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), database, logger: false })
  const built = tally()
  await app.ready()
  const ready = tally()
  t.same(app.background.names, STOP_ORDER, 'every timer and loop of the app is in the one list')
  // The check below sees these timers only because they are not unref'd: if they were, it
  // would prove nothing.
  t.equal((ready.Timeout ?? 0) - (built.Timeout ?? 0), STOP_ORDER.length, 'each task started one timer when the app became ready')
  await app.close()
  await database.close()
  t.same(await settledTally(before), before, 'after close, the same timers and sockets as before the app was built')
  t.same(app.background.stopped, STOP_ORDER, 'stopped in the stated order')
})

t.test('nothing starts a timer when it is built, only when the app is ready', async (t) => {
  const database = await (await ownDatabase(t))()
  t.teardown(() => database.close())
  const before = tally()
  const built = [new CatalogCache(database, { bytes: 1000, searchBytes: 1000, maxMs: 1000, settleMs: 1000 }), new Store(), new ApiKeyCache(database, { ttlMs: 1000 })]
  const worker = new WebhookWorker(database, {
    policy: new WebhookUrlPolicy({ allowHttp: true, allowedHosts: [] }),
    pollMs: 10,
    concurrency: 1,
    leaseMs: 2000,
    timeoutMs: 1000,
    maxResponseBytes: 1000,
    keepAliveMs: 1000,
    retryMs: [],
    jitter: 0,
    disableAfterMs: 1000
  })
  t.same(tally(), before, `the catalogue cache, the store, the key cache (${built.length}) and the worker start no timer`)
  worker.start()
  t.equal(tally().Timeout, (before.Timeout ?? 0) + 1, 'the worker polls once started')
  await worker.stop(0)
  t.same(await settledTally(before), before, 'and no more once stopped')
})

t.test('the last use of a key is written when the app closes, before the database is', async (t) => {
  // The flush interval is far longer than the test: only the flush at close writes it.
  const app = await buildTestApp(t, { env: { KEY_LAST_USED_FLUSH_MS: '3600000' } })
  await app.ready()
  const { id, key } = await makeKey(app, ['products:list'])
  t.equal((await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })).statusCode, 200, 'the key is used')
  const lastUsed = async () => (await execute<{ at: string | null }>(app.database.db, sql`select last_used_at::text as at from api_keys where id = ${id}`))[0]!.at
  t.equal(await lastUsed(), null, 'not written while the app runs')
  await app.close()
  t.ok(await lastUsed(), 'written by the flush at close')
})

t.test('a periodic task', async (t) => {
  t.test('is not overlapped by itself, and stopping waits for the run under way', async (t) => {
    let runs = 0
    let finished = 0
    let started!: () => void
    const first = new Promise<void>((resolve) => { started = resolve })
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    // Each run waits for the test to let it finish: however slow the machine, the first is
    // still under way while the interval passes again and again.
    const task = every('slow', 5, async () => {
      runs++
      started()
      await gate
      finished++
    }, { onError: (err) => { throw err } })
    task.start()
    await first
    await sleep(50)
    t.equal(runs, 1, 'one run, though the interval passed several times')
    let stopped = false
    const stopping = task.stop().then(() => { stopped = true })
    await sleep(20)
    t.notOk(stopped, 'stop waits for the run under way')
    release()
    await stopping
    t.equal(finished, 1, 'the run under way finished before stop resolved')
    await sleep(30)
    t.equal(runs, 1, 'and none after')
  })

  t.test('reports a failed run and keeps its schedule', async (t) => {
    const errors: unknown[] = []
    let runs = 0
    const task = every('failing', 5, async () => {
      runs++
      throw new Error(`run ${runs}`)
    }, { onError: (err) => errors.push(err) })
    task.start()
    await until('three runs', () => (runs >= 3 ? true : undefined))
    await task.stop()
    t.ok(runs >= 3, `ran again after failing (${runs} runs)`)
    t.equal(errors.length, runs, 'each failure reported')
  })

  t.test('with runOnStop runs once more when stopped', async (t) => {
    let runs = 0
    const task = every('flush', 3_600_000, async () => { runs++ }, { onError: (err) => { throw err }, runOnStop: true })
    task.start()
    await task.stop()
    t.equal(runs, 1, 'one run, at stop')
  })
})

t.test('the registry', async (t) => {
  const log: string[] = []
  const task = (name: string, extra: Partial<BackgroundTask> = {}): BackgroundTask => ({
    name,
    start: () => log.push(`start ${name}`),
    stop: async () => {
      log.push(`stop ${name}`)
      await sleep(10)
      log.push(`stopped ${name}`)
    },
    ...extra
  })

  t.test('starts in the reverse order, stops in the order given, one after the other', async (t) => {
    log.length = 0
    const errors: string[] = []
    const work = new BackgroundWork((_err, what) => errors.push(what))
    work.add(task('takes work'))
    work.add(task('job'))
    work.add(task('flush'))
    work.start()
    work.start()
    t.same(log, ['start flush', 'start job', 'start takes work'], 'once, the taker of new work last')
    log.length = 0
    await work.stop()
    t.same(log, ['stop takes work', 'stopped takes work', 'stop job', 'stopped job', 'stop flush', 'stopped flush'], 'each finished before the next begins')
    t.same(work.stopped, ['takes work', 'job', 'flush'], 'the order recorded')
    t.same(errors, [], 'nothing failed')
  })

  t.test('a task that stops early begins at preClose; the others wait for close', async (t) => {
    log.length = 0
    const work = new BackgroundWork(() => {})
    work.add(task('worker', { stopsEarly: true }))
    work.add(task('job'))
    work.start()
    log.length = 0
    work.beginStopping()
    t.same(log, ['stop worker'], 'only the early one')
    await work.stop()
    t.same(log, ['stop worker', 'stopped worker', 'stop job', 'stopped job'], 'stopped once, then the rest')
  })

  t.test('a task that fails to stop is reported and the next is stopped all the same', async (t) => {
    const errors: string[] = []
    const work = new BackgroundWork((_err, what) => errors.push(what))
    work.add({ name: 'broken', start: () => {}, stop: async () => { throw new Error('stuck') } })
    work.add(task('next'))
    work.start()
    await work.stop()
    t.same(errors, ['stopping broken'], 'the failure reported')
    t.same(work.stopped, ['broken', 'next'], 'and the next task stopped')
  })

  t.test('an app never readied has nothing to stop', async (t) => {
    const work = new BackgroundWork(() => {})
    let stops = 0
    work.add({ name: 'idle', start: () => {}, stop: async () => { stops++ } })
    work.beginStopping()
    await work.stop()
    t.equal(stops, 0, 'no stop called')
    t.same(work.stopped, [], 'nothing recorded')
  })
})
