// Catalogue reads from a streaming replica (DATABASE_REPLICA_URLS), through PgBouncer: a
// read goes to the replica only when it has replayed what the feed has shown; paused,
// lagging or stopped, it costs speed and never correctness, and no request fails.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { lsnBytes } from '../../db/replicas.ts'
import { SCOPES, type Scope } from '../../lib/api-key-secret.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, sleep, UNLIMITED, until } from '../helper.ts'
import { pooledDatabase, startTopology } from '../topology.ts'

t.setTimeout(180_000)
const topology = await startTopology(t, { pooler: true, replica: true, poolSize: 4 })

if (topology !== null) {
  const SETTLE_MS = 400
  const { database, name, open } = await pooledDatabase(t, topology, { replicas: true, settleMs: SETTLE_MS })
  const app = await buildTestApp(t, { database, env: { ...UNLIMITED, READ_SETTLE_MS: String(SETTLE_MS), STATE_POLL_MS: '50', EVENT_PUBLISH_MS: '20', CATALOG_CACHE_MB: '0', SEARCH_CACHE_MB: '0' } })
  await app.ready()
  const { key } = await makeKey(app, [...SCOPES] as Scope[])
  const replicaAdmin = postgres(topology.replicaUrl(name), { max: 1, onnotice: () => {} })
  t.teardown(() => replicaAdmin.end())
  const product = makeProduct({ name: 'Replicated', price: 10, quantity: null })
  await importProducts(app, [product])

  const reads = () => database.readStats().reads
  const getProduct = async () => {
    const res = await app.inject({ url: `/external/v1/products/${product.id}`, headers: authHeaders(key) })
    t.equal(res.statusCode, 200, 'the read is answered')
    return res.json<{ name: string }>()
  }
  /** Renames the product on the primary, then waits until the feed shows its event, as a follower would. */
  const renameAndFollow = async (newName: string) => {
    await importProducts(app, [{ ...product, name: newName }])
    for (;;) {
      let seen = 0
      let after = ''
      for (;;) {
        const res = await app.inject({ url: `/external/v1/changes?limit=500${after}`, headers: authHeaders(key) })
        if (res.statusCode !== 200) throw new Error(`feed: ${res.statusCode} ${res.body}`)
        const page = res.json<{ items: Array<{ resourceId: string }>, nextCursor: string, hasMore: boolean }>()
        seen += page.items.filter((e) => e.resourceId === product.id).length
        after = `&after=${encodeURIComponent(page.nextCursor)}`
        if (!page.hasMore) break
      }
      if (seen >= renameCount + 1) break
      await sleep(20)
    }
    renameCount++
  }
  let renameCount = 1
  /**
   * Reads the product until the replica answers one: the app's own sampling (every
   * STATE_POLL_MS) has to find it caught up first, which a busy machine delays, never prevents.
   */
  const untilReplicaAnswers = (name: string) => until('a read answered by the replica', async () => {
    const before = reads().replica1 ?? 0
    t.equal((await getProduct()).name, name)
    return (reads().replica1 ?? 0) > before ? true : undefined
  }, 60_000)

  t.test('a caught-up replica answers catalogue reads', async (t) => {
    await topology.replicaCaughtUp()
    await untilReplicaAnswers('Replicated')
    t.pass(`the replica answered (${JSON.stringify(reads())})`)
    const metrics = (await app.inject({ url: '/metrics' })).body
    t.match(metrics, /storefront_db_catalog_reads_total\{database="replica1"\} [1-9]/)
    t.match(metrics, /storefront_db_replica_lag_bytes\{replica="replica1"\} \d+/)
  })

  t.test('replay paused: a change the feed has shown is never read stale, and the primary answers', async (t) => {
    await replicaAdmin`select pg_wal_replay_pause()`
    t.teardown(() => replicaAdmin`select pg_wal_replay_resume()`)
    await renameAndFollow('Renamed While Paused')
    const primaryBefore = reads().primary ?? 0
    for (let i = 0; i < 5; i++) t.equal((await getProduct()).name, 'Renamed While Paused', 'the read shows the change')
    t.ok((reads().primary ?? 0) >= primaryBefore + 5, 'the primary answered')
    const [stale] = await replicaAdmin<Array<{ name: string }>>`select name from products where id = ${product.id}`
    t.equal(stale!.name, 'Replicated', 'the paused replica still has the old name')
    await replicaAdmin`select pg_wal_replay_resume()`
    await topology.replicaCaughtUp()
    await untilReplicaAnswers('Renamed While Paused')
    t.pass('once it has caught up the replica answers again')
  })

  t.test('replica stopped: every read is answered by the primary, and the replica is used again when it returns', async (t) => {
    await topology.stopReplica()
    t.teardown(() => topology.startReplica().catch(() => {}))
    await renameAndFollow('Renamed While Stopped')
    for (let i = 0; i < 10; i++) t.equal((await getProduct()).name, 'Renamed While Stopped')
    const list = await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })
    t.equal(list.statusCode, 200)
    const ready = await app.inject({ url: '/readyz' })
    t.equal(ready.statusCode, 200, '/readyz depends on the primary only')
    t.match((await app.inject({ url: '/metrics' })).body, /storefront_db_replica_up\{replica="replica1"\} 0/)
    // What the instance logs: one line naming the replica by its role, once per outage.
    const other = await open()
    const [line, ...more] = await other.sampleReplicas()
    t.match(line, /^cannot reach the database at 127\.0\.0\.1:\d+ \(replica 1\): connection refused; catalogue reads go to the primary meanwhile$/)
    t.same(more, [], 'one line for the one replica')
    t.same(await other.sampleReplicas(), [], 'said once, not at every sample')
    await topology.startReplica()
    await topology.replicaCaughtUp()
    await untilReplicaAnswers('Renamed While Stopped')
    t.pass('used again')
  })

  t.test('lagging under a stream of changes: each read shows at least what the feed has shown', async (t) => {
    let stale = 0
    for (let i = 0; i < 8; i++) {
      const newName = `Lagging ${i}`
      await renameAndFollow(newName)
      // Replay is slowed by taking it in turns with pauses.
      if (i % 2 === 0) await replicaAdmin`select pg_wal_replay_pause()`
      else await replicaAdmin`select pg_wal_replay_resume()`
      if ((await getProduct()).name !== newName) stale++
    }
    await replicaAdmin`select pg_wal_replay_resume()`
    t.equal(stale, 0, 'no stale read')
  })

  t.test('LSNs compare as numbers', async (t) => {
    t.ok(lsnBytes('10/0') > lsnBytes('F/FFFFFFFF'))
    const [row] = await execute<{ lsn: string }>(database.db, sql`select '1/A0'::pg_lsn::text as lsn`)
    t.equal(lsnBytes(row!.lsn), 0x1_0000_00a0n)
  })
}
