// Every guarantee behind a real PgBouncer in transaction mode, with a pool of 4 server
// connections shared by two instances that open 8 each: start-up refusals, the statement
// timeout, the migration lock, no oversell, idempotency, order numbers, the gap-free feed,
// webhooks delivered once, revocation and maintenance in force within 5 s, and no 5xx under
// a mixed concurrent load.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import type { App } from '../../app.ts'
import { setApiKeyStatus } from '../../db/api-keys.ts'
import { execute, migrateDatabase, openDatabase } from '../../db/client.ts'
import { ADVISORY_LOCKS } from '../../db/locks.ts'
import { writeSetting } from '../../db/settings.ts'
import { SCOPES, type Scope } from '../../lib/api-key-secret.ts'
import {
  authHeaders, buildTestApp, importProducts, line, makeKey, makeProduct, orderBody, postOrder, productStock, sleep, until,
  type OrderSummary
} from '../helper.ts'
import { pooledDatabase, startTopology } from '../topology.ts'
import { startReceiver, WEBHOOK_TEST_ENV } from '../webhook-receiver.ts'

t.setTimeout(240_000)
const topology = await startTopology(t, { pooler: true, poolSize: 4 })

if (topology !== null) {
  const everyScope = [...SCOPES] as Scope[]
  const { database: first, name, open } = await pooledDatabase(t, topology, { poolSize: 8 })
  const second = await open()
  // Every instance on one database delivers webhooks, so all of them may reach the test receiver.
  const env = { ...WEBHOOK_TEST_ENV, WEBHOOK_CONCURRENCY: '4', WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2', READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: '10', STATE_POLL_MS: '100', KEY_CACHE_TTL_MS: '1000' }
  const a = await buildTestApp(t, { database: first, env })
  const b = await buildTestApp(t, { database: second, env: { ...env, EVENT_PUBLISH_MS: '13', WEBHOOK_POLL_MS: '13' } })
  await Promise.all([a.ready(), b.ready()])
  const { key } = await makeKey(a, everyScope)
  const instances: [App, App] = [a, b]

  t.test('without DATABASE_POOLER=transaction, opening the pooler fails with one line naming the setting', async (t) => {
    const err = await openDatabase({ url: topology.poolerUrl(name) }).then(() => null, (e: unknown) => e as Error & { code?: string })
    t.equal(err?.code, 'POOLER_MISMATCH')
    t.equal(err?.message, `the database at ${new URL(topology.poolerUrl()).host} (primary) is behind a transaction pooler (it refused the start-up parameter jit): set DATABASE_POOLER=transaction`)
    t.notOk(err?.message.includes('\n'), 'one line')
  })

  t.test('a direct connection with DATABASE_POOLER=none opens as before', async (t) => {
    const direct = await openDatabase({ url: topology.primaryUrl(name), poolSize: 1 })
    t.teardown(() => direct.close())
    await direct.ping()
    t.equal(direct.pooler, 'none')
  })

  t.test('migrate behind the pooler needs DATABASE_DIRECT_URL', async (t) => {
    const pooled = await openDatabase({ url: topology.poolerUrl(name), pooler: 'transaction', poolSize: 1 })
    t.teardown(() => pooled.close())
    await t.rejects(migrateDatabase(pooled, topology.poolerUrl(name)), {
      code: 'DIRECT_URL_REQUIRED',
      message: 'migrate needs DATABASE_DIRECT_URL (a session connection to the primary) when DATABASE_POOLER=transaction'
    })
  })

  t.test('the migration lock is a session lock on the direct connection: a second migrate waits for it', async (t) => {
    const holder = postgres(topology.primaryUrl(name), { max: 1, onnotice: () => {} })
    t.teardown(() => holder.end())
    await holder`select pg_advisory_lock(${ADVISORY_LOCKS.migration})`
    let done = false
    const migrating = migrateDatabase(first).then(() => { done = true })
    await sleep(500)
    t.notOk(done, 'migrate waits while another session holds the lock')
    await holder`select pg_advisory_unlock(${ADVISORY_LOCKS.migration})`
    await migrating
    t.ok(done, 'and finishes once it is released')
  })

  t.test('a stuck statement is cancelled at the statement timeout, in and out of transactions', async (t) => {
    const quick = await openDatabase({ url: topology.poolerUrl(name), pooler: 'transaction', poolSize: 2, statementTimeoutMs: 300 })
    t.teardown(() => quick.close())
    let started = Date.now()
    await t.rejects(execute(quick.db, sql`select pg_sleep(5)`), { cause: { code: '57014' } }, 'a statement on its own')
    t.ok(Date.now() - started < 2000, `cancelled after ${Date.now() - started} ms`)
    started = Date.now()
    await t.rejects(quick.db.transaction(async (tx) => { await execute(tx, sql`select pg_sleep(5)`) }), { cause: { code: '57014' } }, 'in a transaction')
    t.ok(Date.now() - started < 2000, `cancelled after ${Date.now() - started} ms`)
    const [setting] = await quick.db.transaction(async (tx) => execute<{ timeout: string }>(tx, sql`select current_setting('statement_timeout') as timeout`))
    t.equal(setting!.timeout, '300ms', 'set inside each transaction')
    const [leaked] = await execute<{ timeout: string }>(quick.db, sql`select current_setting('statement_timeout') as timeout`)
    t.equal(leaked!.timeout, '0', 'and nothing is left on the server connection for the next client')
    t.same(await execute(quick.db, sql`select 1 as one`), [{ one: 1 }], 'the connection serves again')
  })

  t.test('60 concurrent orders for the last 10 units through the pooler: exactly 10 succeed', async (t) => {
    const product = makeProduct({ name: 'Last Units', quantity: 10 })
    await importProducts(a, [product])
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => postOrder(instances[i % 2]!, key, orderBody([line(product, 1)]))))
    const statuses = answers.map((r) => r.statusCode)
    t.equal(statuses.filter((s) => s === 201).length, 10, 'ten orders')
    t.same(answers.filter((r) => r.statusCode !== 201).filter((r) => !(r.statusCode === 400 && /stock/i.test(r.json<{ message: string }>().message))).map((r) => r.body), [],
      'the other 50 are refused for stock')
    t.equal(await productStock(a, product.id), 0, 'no oversell')
    const numbers = answers.filter((r) => r.statusCode === 201).map((r) => r.json<OrderSummary>().orderNumber)
    t.equal(new Set(numbers).size, 10, 'order numbers are unique')
  })

  t.test('order numbers increase', async (t) => {
    const product = makeProduct({ name: 'Plenty', quantity: null })
    await importProducts(a, [product])
    const numbers: number[] = []
    for (let i = 0; i < 6; i++) {
      const res = await postOrder(instances[i % 2]!, key, orderBody([line(product, 1)]))
      t.equal(res.statusCode, 201)
      numbers.push(Number(res.json<OrderSummary>().orderNumber.replace(/\D/g, '')))
    }
    t.same(numbers, [...numbers].sort((x, y) => x - y), `increasing: ${numbers.join(', ')}`)
    t.equal(new Set(numbers).size, numbers.length)
  })

  t.test('idempotency through the pooler: replay, 409 while in flight, 422 on reuse', async (t) => {
    const product = makeProduct({ name: 'Idempotent', quantity: 100 })
    await importProducts(a, [product])
    const body = orderBody([line(product, 1)])
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => postOrder(instances[i % 2]!, key, body, { 'idempotency-key': 'pooled-1' })))
    const ok = answers.filter((r) => r.statusCode === 201)
    t.same(answers.filter((r) => !(r.statusCode === 201 || (r.statusCode === 409 && r.json<{ error: string }>().error === 'idempotency_key_in_use'))).map((r) => r.body), [],
      'each answer is 201 or 409 idempotency_key_in_use')
    t.equal(new Set(ok.map((r) => r.json<OrderSummary>().id)).size, 1, 'one order')
    t.equal(await productStock(a, product.id), 99, 'stock taken once')
    const replay = await postOrder(b, key, body, { 'idempotency-key': 'pooled-1' })
    t.equal(replay.statusCode, 201)
    t.equal(replay.headers['idempotent-replayed'], 'true')
    const reused = await postOrder(a, key, orderBody([line(product, 2)]), { 'idempotency-key': 'pooled-1' })
    t.equal(reused.statusCode, 422)
    t.equal(reused.json<{ error: string }>().error, 'idempotency_key_reused')
  })

  t.test('the changes feed is gap-free with two instances publishing through the pooler', async (t) => {
    const product = makeProduct({ name: 'Fed', quantity: null })
    await importProducts(a, [product])
    const read = async (app: App, cursor: string | null) => {
      const res = await app.inject({ url: `/external/v1/changes?limit=50${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`, headers: authHeaders(key) })
      if (res.statusCode !== 200) throw new Error(`feed: ${res.statusCode} ${res.body}`)
      return res.json<{ items: Array<{ id: string, type: string, resourceId: string }>, nextCursor: string, hasMore: boolean }>()
    }
    // Start from the end of what is published now.
    let cursor: string | null = null
    for (let page = await read(a, null); ; page = await read(a, cursor)) {
      cursor = page.nextCursor
      if (!page.hasMore) break
    }
    const start = cursor
    const created: string[] = []
    const state = { writing: true }
    const writers = Array.from({ length: 6 }, async (_, w) => {
      while (state.writing) {
        const res = await postOrder(instances[w % 2]!, key, orderBody([line(product, 1)]))
        if (res.statusCode === 201) created.push(res.json<OrderSummary>().id)
      }
    })
    const seen: string[] = []
    const deadline = Date.now() + 3000
    let turn = 0
    while (Date.now() < deadline) {
      const page = await read(instances[turn++ % 2]!, cursor)
      seen.push(...page.items.map((e) => e.id))
      cursor = page.nextCursor
      await sleep(5)
    }
    state.writing = false
    await Promise.all(writers)
    // Let the last commits be published, then read to the end.
    await until('every order in the feed', async () => {
      const page = await read(a, cursor)
      seen.push(...page.items.map((e) => e.id))
      cursor = page.nextCursor
      return page.hasMore ? undefined : true
    })
    await sleep(300)
    for (let page = await read(b, cursor); ; page = await read(b, cursor)) {
      seen.push(...page.items.map((e) => e.id))
      cursor = page.nextCursor
      if (!page.hasMore) break
    }
    const reread: Array<{ id: string, type: string, resourceId: string }> = []
    cursor = start
    for (let page = await read(b, cursor); ; page = await read(b, cursor)) {
      reread.push(...page.items)
      cursor = page.nextCursor
      if (!page.hasMore) break
    }
    t.ok(created.length > 10, `${created.length} orders written meanwhile`)
    t.same(seen, reread.map((e) => e.id), 'what the follower saw is exactly a full re-read: no gap, no repeat')
    const orderEvents = new Set(reread.filter((e) => e.type === 'order.created').map((e) => e.resourceId))
    t.same(created.filter((id) => !orderEvents.has(id)), [], 'every order created is in the feed')
  })

  t.test('webhooks are delivered exactly once with two instances behind the pooler', async (t) => {
    const [x, y] = instances
    const receiver = await startReceiver(t)
    receiver.respond(async (_req, res) => { await sleep(5); res.writeHead(200).end() })
    const res = await x.inject({
      method: 'POST',
      url: '/external/v1/webhooks',
      headers: { ...authHeaders(key), 'content-type': 'application/json' },
      payload: JSON.stringify({ url: receiver.url, events: ['product.*'] })
    })
    t.equal(res.statusCode, 201)
    const products = Array.from({ length: 40 }, (_, i) => makeProduct({ name: `Hooked ${i}` }))
    for (let i = 0; i < products.length; i += 10) await importProducts(i % 20 === 0 ? x : y, products.slice(i, i + 10))
    await receiver.waitFor(40, 60_000)
    await sleep(1000)
    const perId = new Map<string, number>()
    for (const hit of receiver.received) perId.set(hit.id, (perId.get(hit.id) ?? 0) + 1)
    t.equal(perId.size, 40, 'every event')
    t.same([...perId.values()].filter((c) => c !== 1), [], 'each exactly once')
  })

  t.test('a revoked key and maintenance are in force on the other instance within 5 s', async (t) => {
    const made = await makeKey(a, everyScope, { name: 'to revoke' })
    const get = (app: App, k: string) => app.inject({ url: '/external/v1/products', headers: authHeaders(k) })
    t.equal((await get(b, made.key)).statusCode, 200)
    const revokedAt = Date.now()
    t.equal(await setApiKeyStatus(first.db, made.id, 'revoked'), 'ok')
    await until('the revocation on the other instance', async () => (await get(b, made.key)).statusCode === 401 ? true : undefined, 5000)
    t.ok(Date.now() - revokedAt < 5000, `revoked within ${Date.now() - revokedAt} ms`)

    const since = Date.now()
    await writeSetting(second.db, 'maintenance', true)
    t.teardown(() => writeSetting(second.db, 'maintenance', false))
    await until('maintenance on the other instance', async () => (await postOrder(a, key, orderBody([line(makeProduct(), 1)]))).statusCode === 503 ? true : undefined, 5000)
    t.ok(Date.now() - since < 5000, `maintenance within ${Date.now() - since} ms`)
    await writeSetting(second.db, 'maintenance', false)
  })

  /** 16 connections of product reads, list pages, order creation and order lists for 4 s, spread over `apps`. */
  async function mixedLoad (apps: App[], catalogue: ReturnType<typeof makeProduct>[]) {
    const statuses = new Map<number, number>()
    const slowest = [0, 0, 0, 0]
    const failures: string[] = []
    const end = Date.now() + 4000
    const kinds = [
      (app: App) => app.inject({ url: `/external/v1/products/${catalogue[Math.floor(Math.random() * catalogue.length)]!.id}`, headers: authHeaders(key) }),
      (app: App) => app.inject({ url: `/external/v1/products?page=${1 + Math.floor(Math.random() * 3)}&query=Loaded`, headers: authHeaders(key) }),
      (app: App) => postOrder(app, key, orderBody([line(catalogue[Math.floor(Math.random() * catalogue.length)]!, 1)])),
      (app: App) => app.inject({ url: '/external/v1/orders?page=1', headers: authHeaders(key) })
    ]
    let sent = 0
    await Promise.all(Array.from({ length: 16 }, async (_, c) => {
      while (Date.now() < end) {
        const began = Date.now()
        const res = await kinds[c % kinds.length]!(apps[c % apps.length]!)
        slowest[c % kinds.length] = Math.max(slowest[c % kinds.length]!, Date.now() - began)
        if (res.statusCode >= 500) failures.push(`request kind ${c % kinds.length}: ${res.statusCode} ${res.body}`)
        sent++
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      }
    }))
    return { sent, statuses: Object.fromEntries(statuses), slowest, failures }
  }

  t.test('16 connections of reads, list pages, orders and order lists: no answer of 500 or more', async (t) => {
    const catalogue = Array.from({ length: 60 }, (_, i) => makeProduct({ name: `Loaded ${i}`, quantity: null }))
    await importProducts(a, catalogue)
    // The same load on direct connections first, as the baseline of the ratio reported.
    const loadEnv = env
    const build = (urlOf: string, pooler: 'none' | 'transaction') => Promise.all([0, 1].map(async () => {
      const database = await openDatabase({ url: urlOf, pooler, directUrl: topology.primaryUrl(name), poolSize: 8 })
      t.teardown(() => database.close())
      const app = await buildTestApp(t, { database, env: loadEnv })
      // Warm: the first requests of an app pay for compiling its routes.
      for (const c of catalogue.slice(0, 3)) await app.inject({ url: `/external/v1/products/${c.id}`, headers: authHeaders(key) })
      return app
    }))
    const direct = await build(topology.primaryUrl(name), 'none')
    const pooledApps = await build(topology.poolerUrl(name), 'transaction')
    const baseline = await mixedLoad(direct, catalogue)
    t.comment(`direct connections: ${baseline.sent} requests ${JSON.stringify(baseline.statuses)}, slowest by kind ${baseline.slowest.join(', ')} ms`)
    const pooled = await mixedLoad(pooledApps, catalogue)
    t.comment(`through the pooler: ${pooled.sent} requests ${JSON.stringify(pooled.statuses)}, slowest by kind ${pooled.slowest.join(', ')} ms; ratio ${(pooled.sent / baseline.sent).toFixed(2)}`)
    t.same(pooled.failures, [], 'no answer of 500 or more through the pooler')
    t.ok(pooled.sent > 100, `${pooled.sent} requests answered`)
  })
}
