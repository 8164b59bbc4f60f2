// Where an export joins the feed, case by case: the changesCursor is the last position its
// snapshot holds, so every change the export does not show gets a position after it, and a
// change it shows may come again after it (committed before the snapshot, published after).
// Each case is set up step by step; on PostgreSQL also those where another transaction
// commits, or a publisher is halfway, while the snapshot is open.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { createApiKey } from '../../db/api-keys.ts'
import { execute, type Tx } from '../../db/client.ts'
import { declareProductRows, fetchRows, startExport } from '../../db/export.ts'
import type { ProductFilters } from '../../db/products.ts'
import { insertEndpoint } from '../../db/webhooks.ts'
import { positionOfEventId } from '../../lib/event-id.ts'
import { checkCatalog } from '../../lib/catalog-file.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { publishChanges, readChanges } from '../../services/changes.ts'
import { Exporter } from '../../services/export.ts'
import { parseExport } from '../export.ts'
import { createTestDatabase, makeProduct, until, usingPostgres } from '../helper.ts'

const { database, url } = await createTestDatabase(t)
const product = makeProduct({ name: 'Joined Kettle', quantity: 1 })
const reader = { apiKeyId: crypto.randomUUID(), scopes: ['products:list'] as const }

/** Sets the product's stock by an import: one product.updated event, committed, not yet published. */
const restock = (quantity: number) => importCatalog(database, checkCatalog({ products: [{ ...product, quantity } as CatalogProduct] }))

/** Events after `cursor` the feed shows for the product (with no settle window). */
async function eventsAfter (cursor: number): Promise<number[]> {
  const page = await readChanges(database, reader, { after: `evt_${cursor}`, limit: 500 }, { settleMs: 0 })
  return page.items.filter((e) => e.resourceId === product.id).map((e) => positionOfEventId(e.id)!)
}

/** The products export, read whole, as the service produces it. */
async function exportProducts (filters: ProductFilters) {
  const started = await new Exporter(database, { openTimeoutMs: 5000, concurrency: 4 }).products(reader.apiKeyId, filters)
  return parseExport(Buffer.concat(await started.body.toArray() as Buffer[]).toString('utf8'))
}

async function lastPosition (): Promise<number> {
  const [row] = await execute<{ position: string }>(database.db, sql`select coalesce(max(position), 0)::text as position from change_events`)
  return Number(row!.position)
}

/** The product's stock as the export shows it, read in the snapshot's transaction. */
async function exportedStock (tx: Tx): Promise<number | null> {
  await declareProductRows(tx, { sku: product.sku! }, new Date())
  const [row] = await fetchRows(tx, 10)
  // Its stock changes rewrite its stored document: the export sends that one as it is.
  if (row!.renderId !== null) throw new Error('the stored document should be current')
  return (JSON.parse(row!.body as string) as { quantity: number | null }).quantity
}

await restock(1)
await publishChanges(database)

t.test('a change committed before the snapshot, published after it: in the export, and again after the cursor', async (t) => {
  const published = await lastPosition()
  await restock(2)
  const exported = await exportProducts({ sku: product.sku! })
  t.equal(exported.records[0]!.quantity, 2, 'the export shows it')
  t.equal(exported.end!.changesCursor, `evt_${published}`, 'the cursor is the last published position: the change has none yet')
  await publishChanges(database)
  t.same(await eventsAfter(published), [published + 1], 'published now, it comes after the cursor: shown twice, never missed')
})

t.test('the settle window: the cursor may be ahead of what the feed shows yet; the feed takes it, and what follows comes once settled', async (t) => {
  await restock(3)
  await publishChanges(database)
  const cursor = (await exportProducts({})).end!.changesCursor
  const settling = { settleMs: 3_600_000 }
  const head = await readChanges(database, reader, { limit: 0 }, settling)
  t.ok(positionOfEventId(head.nextCursor)! < positionOfEventId(cursor)!, `the feed's head (${head.nextCursor}) is behind the cursor (${cursor}) while the change settles`)
  t.same(await readChanges(database, reader, { after: cursor, limit: 100 }, settling), { items: [], nextCursor: cursor, hasMore: false },
    'the feed takes the cursor (not invalid_cursor) and has nothing after it yet')
  await restock(4)
  await publishChanges(database)
  t.same(await eventsAfter(positionOfEventId(cursor)!), [positionOfEventId(cursor)! + 1], 'the next change comes after it')
})

t.test('a change committed while the snapshot is open is not in it, and comes after the cursor (PostgreSQL)', { skip: usingPostgres ? false : 'PGlite runs one transaction at a time' }, async (t) => {
  await restock(5)
  await publishChanges(database)
  const { position, stock } = await database.snapshot(async (tx) => {
    const start = await startExport(tx, { apiKeyId: reader.apiKeyId, slots: 2 })
    // Another connection commits and publishes between the snapshot and the rows.
    await restock(6)
    await publishChanges(database)
    return { position: start.position, stock: await exportedStock(tx) }
  })
  t.equal(stock, 5, 'the rows are read as of the snapshot, though read after the change committed')
  t.same(await eventsAfter(position), [position + 1], 'the change comes after the cursor')
})

t.test('a publisher halfway (positions given, not committed) when the snapshot is taken: those positions come after the cursor (PostgreSQL)', { skip: usingPostgres ? false : 'PGlite runs one transaction at a time' }, async (t) => {
  await restock(7)
  await publishChanges(database)
  await restock(8)
  // The publisher gives the change its position, then queues its webhook delivery. Another
  // transaction has already written, uncommitted, a delivery with the same endpoint and
  // position: the publisher's insert waits on it, its position given and not committed.
  const key = await createApiKey(database.db, { name: 'halfway', scopes: ['products:list'] })
  const endpoint = await insertEndpoint(database.db, { apiKeyId: key.id, url: 'https://example.com/hook', events: ['*'], description: null, secret: 'whsec_halfway' })
  const locker = postgres(url!, { max: 1, onnotice: () => {} })
  t.teardown(() => locker.end())
  const holder = await locker.reserve()
  await holder`begin`
  await holder`insert into webhook_deliveries (endpoint_id, position, type, resource_id, occurred_at)
    values (${endpoint.id}, ${await lastPosition() + 1}, 'product.updated', ${product.id}, now())`
  const [{ pid }] = await holder<[{ pid: number }]>`select pg_backend_pid() as pid`
  const publishing = publishChanges(database)
  await until('the publisher to wait with its position given', async () => {
    const [row] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from pg_stat_activity
      where ${pid}::int = any(pg_blocking_pids(pid))`)
    return row!.n === 1 ? true : undefined
  })
  const { position, stock } = await database.snapshot(async (tx) => {
    const start = await startExport(tx, { apiKeyId: reader.apiKeyId, slots: 2 })
    return { position: start.position, stock: await exportedStock(tx) }
  })
  await holder`rollback`
  holder.release()
  t.equal(await publishing, 1, 'the publisher then commits')
  t.equal(stock, 8, 'the export shows the change')
  t.equal(position, await lastPosition() - 1, 'its cursor is the last position committed before it')
  t.same(await eventsAfter(position), [position + 1], 'and the halfway publisher\'s position comes after the cursor')
  const [queued] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from webhook_deliveries
    where endpoint_id = ${endpoint.id}::uuid and position = ${position + 1}`)
  t.equal(queued!.n, 1, 'its delivery queued once the other transaction rolled back')
})
