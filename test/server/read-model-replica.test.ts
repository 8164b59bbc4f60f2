// The read model through PgBouncer (transaction mode) and from a streaming replica: a
// document whose discount starts while it is being read is never served past the boundary,
// even where nothing can be written (the replica renders it again from its rows).
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { SCOPES, type Scope } from '../../lib/api-key-secret.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, UNLIMITED } from '../helper.ts'
import { pooledDatabase, startTopology } from '../topology.ts'

t.setTimeout(180_000)
const topology = await startTopology(t, { pooler: true, replica: true, poolSize: 4 })

if (topology !== null) {
  const SETTLE_MS = 1000
  const { database } = await pooledDatabase(t, topology, { replicas: true, settleMs: SETTLE_MS })
  // The sweep never runs here: only reads keep the price exact. Without the instance's cache
  // every read reaches a database, so the replica's share past the boundary is not left to
  // the few reads that happen to miss the cache (the cache at a boundary: catalog-cache.test.ts).
  const app = await buildTestApp(t, {
    database,
    env: { ...UNLIMITED, READ_SETTLE_MS: String(SETTLE_MS), STATE_POLL_MS: '50', EVENT_PUBLISH_MS: '20', DISCOUNT_SWEEP_MS: '60000', CATALOG_CACHE_MB: '0', SEARCH_CACHE_MB: '0' }
  })
  await app.ready()
  const { key } = await makeKey(app, [...SCOPES] as Scope[])

  t.test('a discount starting under load: no stale sellPrice past it, from the replica as from the primary', async (t) => {
    const startsAt = new Date(Date.now() + 4000)
    const product = makeProduct({ name: 'Boundary', price: 20, quantity: null, discount: { type: 'percentage', value: 25, startsAt: startsAt.toISOString(), endsAt: null } })
    await importProducts(app, [product])
    await topology.replicaCaughtUp()
    const reads = () => ({ ...database.readStats().reads })
    const stale: string[] = []
    const seen = { before: 0, after: 0 }
    let repliedAfter: Record<string, number> | undefined
    const deadline = startsAt.getTime() + 2500
    await Promise.all(Array.from({ length: 6 }, async (_, worker) => {
      while (Date.now() < deadline) {
        const began = Date.now()
        const url = worker % 2 === 0 ? `/external/v1/products/${product.id}` : `/external/v1/products?sku=${product.sku}`
        const res = await app.inject({ url, headers: authHeaders(key) })
        if (res.statusCode !== 200) {
          stale.push(`${url}: ${res.statusCode}`)
          continue
        }
        const body = res.json<{ sellPrice?: number, items?: Array<{ sellPrice: number }> }>()
        const sellPrice = body.sellPrice ?? body.items?.[0]?.sellPrice
        if (began < startsAt.getTime()) {
          seen.before++
          // Answered before the boundary: the old price (one begun before may end after it).
          if (Date.now() < startsAt.getTime() && sellPrice !== 20) stale.push(`${url} before the boundary: ${sellPrice}`)
        } else {
          repliedAfter ??= reads()
          seen.after++
          if (sellPrice !== 15) stale.push(`${url} at ${new Date(began).toISOString()}: ${sellPrice}`)
        }
      }
    }))
    t.same(stale, [], `no stale price (${seen.before} reads before, ${seen.after} after the boundary)`)
    t.ok(seen.after > 10)
    const end = reads()
    t.ok((end.replica1 ?? 0) > (repliedAfter?.replica1 ?? 0), `the replica answered reads past the boundary (${JSON.stringify(repliedAfter)} → ${JSON.stringify(end)})`)
    const [doc] = await execute<{ body: string }>(database.db, sql`select body from product_documents where product_id = ${product.id}`)
    t.match(JSON.parse(doc!.body), { sellPrice: 20 }, 'the stored document is still the old one: reads rendered it again')
  })
}
