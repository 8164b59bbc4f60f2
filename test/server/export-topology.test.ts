// Exports as stores run at scale: two instances through PgBouncer in transaction mode (4
// server connections for both) and beside a streaming replica. The snapshot is one
// transaction with a cursor (no WITH HOLD, nothing in the session), so it works through the
// pooler; a key's two slots are advisory locks of that transaction, shared by the instances
// through it; the writes and reads of everything else go on while exports pin two of the
// server connections. The snapshot runs on the primary: a replica whose replay is paused
// never makes an export stale.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { declareProductRows, fetchRows, startExport } from '../../db/export.ts'
import { SCOPES, type Scope } from '../../lib/api-key-secret.ts'
import { publishChanges } from '../../services/changes.ts'
import { parseExport, seedPlainProducts, SocketExport } from '../export.ts'
import { authHeaders, buildTestApp, expectError, importProducts, line, makeKey, makeProduct, orderBody, postOrder, until, UNLIMITED } from '../helper.ts'
import { pooledDatabase, startTopology } from '../topology.ts'

t.setTimeout(180_000)
const topology = await startTopology(t, { pooler: true, replica: true, poolSize: 4 })

if (topology !== null) {
  const PRODUCTS = 10_000
  const SETTLE_MS = 500
  const { database, name, open } = await pooledDatabase(t, topology, { replicas: true, settleMs: SETTLE_MS })
  const secondDatabase = await open()
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  const env = { ...UNLIMITED, READ_SETTLE_MS: String(SETTLE_MS), STATE_POLL_MS: '50', EVENT_PUBLISH_MS: '20' }
  const a = await buildTestApp(t, { database, env, contract: false })
  const b = await buildTestApp(t, { database: secondDatabase, env, contract: false })
  await Promise.all([a.listen({ host: '127.0.0.1', port: 0 }), b.listen({ host: '127.0.0.1', port: 0 })])
  const { key } = await makeKey(a, [...SCOPES] as Scope[])
  const url = (app: typeof a, path = '/external/v1/products/export') => `http://127.0.0.1:${(app.server.address() as { port: number }).port}${path}`
  const mug = makeProduct({ name: 'Pooled Mug', quantity: null, price: 7 })
  await importProducts(a, [mug])

  t.test('through the pooler: two exports held at once, a third refused on the other instance, orders and reads go on', async (t) => {
    const held = [await SocketExport.open(url(a), authHeaders(key)), await SocketExport.open(url(b), authHeaders(key))]
    t.same(held.map((r) => r.status), [200, 200])
    await until('both to wait for their clients, each in its transaction', async () => {
      const [row] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and state = 'idle in transaction' and query like 'fetch%'`)
      return row!.n === 2 ? true : undefined
    })
    expectError(t, await b.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) }), 429, 'rate_limit_exceeded')
    for (const app of [a, b]) {
      const orders = await Promise.all(Array.from({ length: 5 }, () => postOrder(app, key, orderBody([line(mug, 1)]))))
      t.same(orders.map((o) => o.statusCode), [201, 201, 201, 201, 201], 'orders go on meanwhile')
      t.equal((await app.inject({ url: `/external/v1/products/${mug.id}`, headers: authHeaders(key) })).statusCode, 200, 'and reads')
    }
    t.equal(await held[0]!.finish(), 'complete')
    t.equal(held[0]!.end?.count, PRODUCTS + 1)
    held[1]!.destroy()
    await until('the departed client\'s transaction to end', async () => {
      const [row] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and state like 'idle in transaction%'`)
      return row!.n === 0 ? true : undefined
    })
    const orders = await b.inject({ url: '/external/v1/orders/export', headers: authHeaders(key) })
    t.equal(orders.statusCode, 200)
    t.equal(parseExport(orders.body).end?.count, 10, 'the key\'s orders, from the other instance')
  })

  t.test('through the pooler the snapshot is one: a change committed after it is not in the rows read later, and comes after the cursor', async (t) => {
    await publishChanges(database)
    const { position, price } = await database.snapshot(async (tx) => {
      const start = await startExport(tx, { apiKeyId: crypto.randomUUID(), slots: 2 })
      // Another server connection commits the change and publishes its event meanwhile.
      await importProducts(b, [{ ...mug, price: 8 }])
      await publishChanges(secondDatabase)
      await declareProductRows(tx, { sku: mug.sku! }, new Date())
      const [row] = await fetchRows(tx, 10)
      return { position: start.position, price: (JSON.parse(row!.body as string) as { price: number }).price }
    })
    t.equal(price, 7, 'the rows are as of the snapshot')
    const [event] = await execute<{ position: string }>(database.db, sql`select max(position)::text as position from change_events where resource_id = ${mug.id}`)
    t.ok(Number(event!.position) > position, `its event (${event!.position}) comes after the cursor (${position})`)
  })

  t.test('beside a replica whose replay is paused, an export still shows the latest catalogue: it reads the primary', async (t) => {
    await topology.replicaCaughtUp()
    const replica = postgres(topology.replicaUrl(name), { max: 1, onnotice: () => {} })
    t.teardown(async () => {
      await replica`select pg_wal_replay_resume()`
      await replica.end()
    })
    await replica`select pg_wal_replay_pause()`
    const priceOnReplica = async () => Number((await replica<Array<{ price: string }>>`select price::text as price from products where id = ${mug.id}`)[0]!.price)
    const replicated = await priceOnReplica()
    await importProducts(a, [{ ...mug, price: 9 }])
    const res = await a.inject({ url: `/external/v1/products/export?sku=${mug.sku!}`, headers: authHeaders(key) })
    t.equal(res.statusCode, 200)
    const exported = parseExport(res.body)
    t.equal(exported.records[0]!.price, 9, 'the change the replica has not replayed is in the export')
    t.equal(exported.lines[0], (await a.inject({ url: `/external/v1/products/${mug.id}`, headers: authHeaders(key) })).body, 'as GET product answers it')
    t.equal(await priceOnReplica(), replicated, `while the replica still has the price before (${replicated})`)
  })
}
