// The changes feed is gap-free under concurrent writers (decisions §10): two instances on one
// database, both publishing every few milliseconds, while orders, status changes, imports and
// raw transactions that commit out of the order they began (some rolling back) all write at
// once, and a reader follows nextCursor with random page sizes on alternating instances. At
// the end the reader's sequence must be exactly a full re-read, and the feed exactly the
// changes that committed. The race only exists on PostgreSQL (PGlite runs one transaction at
// a time, so nothing commits out of order there): on PGlite a shorter run checks paging and
// the accounting only. A first, deterministic test checks the order within one publication.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import { recordEvents } from '../../db/events.ts'
import { positionOfEventId } from '../../lib/event-id.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import type { OrderStatus } from '../../schemas/orders.ts'
import { publishChanges } from '../../services/changes.ts'
import { setOrderStatus, STATUS_TRANSITIONS } from '../../services/order-status.ts'
import {
  authHeaders, buildTestApp, createTestDatabase, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep,
  UNLIMITED, usingPostgres, type OrderSummary
} from '../helper.ts'

interface Event { id: string, type: string, resourceId: string, occurredAt: string, data: Record<string, unknown> }
interface Feed { items: Event[], nextCursor: string, hasMore: boolean }

// Writers run WRITE_MS, and longer (up to MAX_WRITE_MS) until each kind has written enough
// and, on PostgreSQL, enough events were published after one that began later: on a busy
// machine a short run may not produce the case under test.
const WRITE_MS = usingPostgres ? 5000 : 2000
const MAX_WRITE_MS = usingPostgres ? 20_000 : 6000
const ENOUGH = usingPostgres
  ? { polls: 40, statusChanges: 5, imports: 2, rolledBack: 5, inversions: 10 }
  : { polls: 10, statusChanges: 2, imports: 1, rolledBack: 2, inversions: 0 }
const PROBE_SLEEP_MS = usingPostgres ? 50 : 5
const WRITERS = usingPostgres ? { orders: 6, others: 1, status: 2, probes: 4 } : { orders: 2, others: 1, status: 1, probes: 2 }

const randomInt = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1))
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!
const positionOf = (id: string) => {
  const position = positionOfEventId(id)
  if (position === null) throw new Error(`not an event id: ${id}`)
  return position
}

class RollBack extends Error {}

/** A failed write in one line: PostgreSQL's code and message when there is one. */
function describeError (err: unknown): string {
  const cause = (err as { cause?: { code?: string, message?: string } }).cause
  if (cause?.code !== undefined) return `${cause.code} ${cause.message ?? ''}`
  return err instanceof Error ? err.message : String(err)
}

/** What `expected` holds more often than `actual`, and the other way round. */
function multisetDifference (expected: string[], actual: string[]) {
  const counts = new Map<string, number>()
  for (const item of expected) counts.set(item, (counts.get(item) ?? 0) + 1)
  for (const item of actual) counts.set(item, (counts.get(item) ?? 0) - 1)
  const missing: string[] = []
  const extra: string[] = []
  for (const [item, count] of counts) {
    for (let i = 0; i < count; i++) missing.push(item)
    for (let i = 0; i < -count; i++) extra.push(item)
  }
  return { missing, extra }
}

const started = Date.now()
const { database: first, url } = await createTestDatabase(t, { poolSize: 16 })
// A second instance has its own pool, as another process would.
let second: Database = first
if (url !== undefined) {
  second = await openDatabase({ url, poolSize: 16 })
  t.teardown(() => second.close())
}
const env = (publishMs: number) => ({ ...UNLIMITED, READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: String(publishMs) })
const instances: [App, App] = [
  await buildTestApp(t, { database: first, env: env(5) }),
  await buildTestApp(t, { database: second, env: env(8) })
]
const [a] = instances
const { key, id: keyId } = await makeKey(a, ['products:list', 'orders:list', 'orders:create'])
const { key: otherKey } = await makeKey(a, ['orders:list', 'orders:create'], { name: 'another integrator' })

// Orders buy from these; imports touch only their own products, so the product events of
// each set can be counted apart.
const tracked = [1, 2, 3, 4, 5, 6, 7, 8].map((i) => makeProduct({ name: `Tracked ${i}`, quantity: 1_000_000 }))
const untracked = makeProduct({ name: 'Untracked', quantity: null })
const sellable = [...tracked, untracked]
const trackedIds = new Set(tracked.map((p) => p.id))
const imported: CatalogProduct[] = [1, 2, 3].map((i) => makeProduct({ name: `Imported ${i}` }))
await importProducts(a, [...sellable, ...imported])
const sellableIds = new Set(sellable.map((p) => p.id))

// What the writers committed, as they saw it.
const orders = new Map<string, { orderNumber: string, mine: boolean, trackedIds: string[] }>()
const statusChanges: Array<{ orderId: string, from: OrderStatus, to: OrderStatus }> = []
const committedProbes = new Set<string>()
const rolledBackProbes = new Set<string>()

t.test('one publication numbers its events in the order they committed', async (t) => {
  // Nothing publishes yet (the instances start their jobs when ready): write single-event
  // transactions across the next power of ten of seq, then publish them all at once.
  const [row] = await execute<{ seq: number }>(first.db, sql`select coalesce(max(seq), 0)::int as seq from change_events`)
  const through = 10 ** String(row!.seq + 1).length + 1
  const written: string[] = []
  for (let seq = row!.seq + 1; seq <= through; seq++) {
    const id = crypto.randomUUID()
    await recordEvents(first.db, [{ type: 'product.updated', resourceId: id }])
    written.push(id)
    committedProbes.add(id)
  }
  t.equal(await publishChanges(first), (await execute(first.db, sql`select 1 from change_events`)).length, 'one publication took every event')
  const res = await a.inject({ url: '/external/v1/changes?limit=500', headers: authHeaders(key) })
  const listed = res.json<Feed>().items.map((e) => e.resourceId).filter((id) => committedProbes.has(id))
  // A batch that crosses a power of ten of seq: sorted as text it would read 10 before 9.
  t.same(listed, written, 'the feed lists them in the order they committed')
  t.comment(`the feed lists seq ${listed.map((id) => row!.seq + 1 + written.indexOf(id)).join(', ')}`)
})

t.test('a reader following nextCursor sees every committed event exactly once while many writers commit out of order', async (t) => {
  await Promise.all(instances.map((app) => app.ready()))
  const placed: Array<{ id: string, orderNumber: string }> = []
  const importedIds = new Set(imported.map((p) => p.id))
  let imports = 0
  let refusedStatus = 0
  const writeFailures: string[] = []

  // Events published in a later batch than an event written after them: their transaction
  // began earlier and committed later.
  const countInversions = async () => {
    const [row] = await execute<{ count: number }>(first.db, sql`
      select count(*)::int as count from (
        select seq < max(seq) over (order by published_at range between unbounded preceding and current row exclude group) as late
        from change_events where published_at is not null) l
      where late`)
    return row!.count
  }
  let inversions = 0
  const writingFrom = Date.now()
  const enough = () => polls >= ENOUGH.polls && statusChanges.length >= ENOUGH.statusChanges && imports >= ENOUGH.imports &&
    rolledBackProbes.size >= ENOUGH.rolledBack && inversions >= ENOUGH.inversions
  const writing = () => Date.now() - writingFrom < WRITE_MS || (Date.now() - writingFrom < MAX_WRITE_MS && !enough())
  async function monitor () {
    while (writing()) {
      await sleep(250)
      inversions = await countInversions()
    }
  }

  async function orderWriter (n: number, mine: boolean) {
    for (let i = n; writing(); i++) {
      const lines = [...sellable].sort(() => Math.random() - 0.5).slice(0, randomInt(1, 3))
      const res = await postOrder(instances[i % 2]!, mine ? key : otherKey, orderBody(lines.map((p) => line(p, randomInt(1, 3)))))
      if (res.statusCode !== 201) {
        writeFailures.push(`order: ${res.statusCode} ${res.body}`)
        continue
      }
      const order = res.json<OrderSummary>()
      orders.set(order.id, { orderNumber: order.orderNumber, mine, trackedIds: lines.filter((p) => trackedIds.has(p.id)).map((p) => p.id) })
      placed.push({ id: order.id, orderNumber: order.orderNumber })
    }
  }

  async function statusWriter (n: number) {
    for (let i = n; writing(); i++) {
      const order = placed.length > 0 ? pick(placed) : undefined
      if (order === undefined) {
        await sleep(5)
        continue
      }
      // Any status: a move the order's current status forbids writes nothing, and must show nothing.
      const to = pick(Object.keys(STATUS_TRANSITIONS) as OrderStatus[])
      try {
        const change = await setOrderStatus(instances[i % 2]!.database, order.orderNumber, to)
        if (change.ok) statusChanges.push({ orderId: order.id, from: change.from, to })
        else refusedStatus++
      } catch (err) {
        writeFailures.push(`status change: ${describeError(err)}`)
      }
    }
  }

  async function importWriter () {
    for (let i = 0; writing(); i++) {
      const fresh = [makeProduct({ name: `New ${i}a` }), makeProduct({ name: `New ${i}b` })]
      const changed = { ...pick(imported), price: randomInt(1, 500) }
      // Its products count as imported either way: a failed import must have left no event.
      imported.push(...fresh)
      for (const p of fresh) importedIds.add(p.id)
      try {
        await importProducts(instances[i % 2]!, [...fresh, changed])
        imports++
      } catch (err) {
        writeFailures.push(`import: ${describeError(err)}`)
      }
      await sleep(randomInt(10, 40))
    }
  }

  // An event written first thing in a transaction that commits up to PROBE_SLEEP_MS later:
  // transactions that begin after it commit before it. Its resource id names it.
  async function probeWriter (n: number) {
    for (let i = n; writing(); i++) {
      const id = crypto.randomUUID()
      const rollBack = Math.random() < 0.2
      try {
        await instances[i % 2]!.database.db.transaction(async (tx) => {
          await recordEvents(tx, [{ type: 'product.updated', resourceId: id }])
          await sleep(randomInt(0, PROBE_SLEEP_MS))
          if (rollBack) throw new RollBack()
        })
        committedProbes.add(id)
      } catch (err) {
        // Rolled back either way; only our own roll-back is expected.
        rolledBackProbes.add(id)
        if (!(err instanceof RollBack)) writeFailures.push(`probe: ${describeError(err)}`)
      }
    }
  }

  // The reader: what it was given, and everything that broke a page's promises.
  const seen: Event[] = []
  const pageProblems: string[] = []
  let cursor: string | undefined
  let polls = 0
  let emptyPolls = 0
  async function poll (): Promise<Feed> {
    const app = instances[polls++ % 2]!
    const limit = randomInt(1, 500)
    const query = cursor === undefined ? `limit=${limit}` : `after=${cursor}&limit=${limit}`
    const res = await app.inject({ url: `/external/v1/changes?${query}`, headers: authHeaders(key) })
    if (res.statusCode !== 200) throw new Error(`GET /changes?${query}: ${res.statusCode} ${res.body}`)
    const page = res.json<Feed>()
    const after = cursor === undefined ? 0 : positionOf(cursor)
    let previous = after
    for (const item of page.items) {
      const position = positionOf(item.id)
      if (position <= previous) pageProblems.push(`?${query}: ${item.id} is not after ${previous}`)
      previous = position
    }
    if (page.items.length > limit) pageProblems.push(`?${query}: ${page.items.length} items`)
    if (page.hasMore && page.items.length < limit) pageProblems.push(`?${query}: hasMore with a short page`)
    const expectedCursor = page.items.length > 0 ? page.items.at(-1)!.id : (cursor ?? 'evt_0')
    if (page.nextCursor !== expectedCursor) pageProblems.push(`?${query}: nextCursor ${page.nextCursor}, expected ${expectedCursor}`)
    if (page.items.length === 0) emptyPolls++
    seen.push(...page.items)
    cursor = page.nextCursor
    return page
  }
  async function reader () {
    while (writing()) {
      const page = await poll()
      if (!page.hasMore) await sleep(randomInt(0, 5))
    }
  }

  await Promise.all([
    monitor(),
    reader(),
    importWriter(),
    ...Array.from({ length: WRITERS.orders }, (_, n) => orderWriter(n, true)),
    ...Array.from({ length: WRITERS.others }, (_, n) => orderWriter(n, false)),
    ...Array.from({ length: WRITERS.status }, (_, n) => statusWriter(n)),
    ...Array.from({ length: WRITERS.probes }, (_, n) => probeWriter(n))
  ])
  const writtenAt = Date.now()

  // The publishers keep running: wait until they have published everything, then drain.
  const unpublished = async () => {
    const [row] = await execute<{ count: number }>(first.db, sql`select count(*)::int as count from change_events where position is null`)
    return row!.count
  }
  const publishBy = Date.now() + 15_000
  while (await unpublished() > 0 && Date.now() < publishBy) {
    await publishChanges(first)
    await sleep(5)
  }
  t.equal(await unpublished(), 0, 'the publishers published every committed event')
  while ((await poll()).hasMore);

  // A full re-read from the oldest event, by a reader that was not there while it happened.
  const full: Event[] = []
  let after: string | undefined
  for (;;) {
    const res = await a.inject({ url: `/external/v1/changes?limit=500${after === undefined ? '' : `&after=${after}`}`, headers: authHeaders(key) })
    if (res.statusCode !== 200) throw new Error(`the full re-read: ${res.statusCode} ${res.body}`)
    const page = res.json<Feed>()
    full.push(...page.items)
    after = page.nextCursor
    if (!page.hasMore) break
  }

  t.same(writeFailures, [], 'every write succeeded')
  t.same(pageProblems, [], 'every page: ids after the cursor and increasing, at most limit items, hasMore and nextCursor as promised')

  const seenIds = seen.map((e) => e.id)
  const fullIds = full.map((e) => e.id)
  t.ok(fullIds.length > 0, 'the feed is not empty')
  t.same(seenIds, fullIds, 'the reader\'s sequence is exactly the full re-read')
  t.equal(new Set(fullIds).size, fullIds.length, 'no id repeated')
  t.ok(fullIds.every((id, i) => i === 0 || positionOf(id) > positionOf(fullIds[i - 1]!)), 'ids strictly increasing')
  t.same(seen, full, 'and each event the same in both')

  // An event the re-read shows but the reader was never given became visible behind a cursor.
  const seenSet = new Set(seenIds)
  const behind = full.filter((e) => !seenSet.has(e.id)).map((e) => `${e.id} ${e.type} ${e.resourceId}`)
  t.same(behind, [], 'no event ever appeared behind a cursor the reader had been given')

  // Positions 1..N without holes, every event published, and the other key's orders in the
  // table but not in this key's feed.
  const [table] = await execute<{ total: number, published: number, max_position: number }>(first.db, sql`
    select count(*)::int as total, count(position)::int as published, coalesce(max(position), 0)::int as max_position
    from change_events`)
  inversions = await countInversions()
  t.equal(table!.published, table!.total, 'every committed event was published')
  t.equal(table!.max_position, table!.total, 'positions run 1..N without a hole')

  // The feed holds exactly the committed changes. Product events of imported products are
  // counted apart (imports may or may not write events yet); everything else is exact.
  const describe = (type: string, resourceId: string, data: Record<string, unknown> = {}) => JSON.stringify([type, resourceId, data])
  const expected: string[] = []
  for (const [id, order] of orders) {
    // Stock taken by any key's order is a product change every key sees.
    for (const productId of order.trackedIds) expected.push(describe('product.updated', productId))
    if (order.mine) expected.push(describe('order.created', id, { orderNumber: order.orderNumber, status: 'pending' }))
  }
  for (const change of statusChanges) {
    const order = orders.get(change.orderId)!
    if (order.mine) expected.push(describe('order.status_changed', change.orderId, { orderNumber: order.orderNumber, status: change.to, previousStatus: change.from }))
    // Cancelling gives the order's tracked units back: a change of those products too.
    if (change.to === 'cancelled') for (const productId of order.trackedIds) expected.push(describe('product.updated', productId))
  }
  for (const id of committedProbes) expected.push(describe('product.updated', id))
  const importEvents = full.filter((e) => importedIds.has(e.resourceId) || (sellableIds.has(e.resourceId) && e.type === 'product.created'))
  const actual = full.filter((e) => !importEvents.includes(e)).map((e) => describe(e.type, e.resourceId, e.data))
  const { missing, extra } = multisetDifference(expected, actual)
  t.same({ missing, extra }, { missing: [], extra: [] }, 'exactly the committed orders, stock changes, status changes and probes, each once')
  t.same(importEvents.filter((e) => !['product.created', 'product.updated', 'product.deleted'].includes(e.type)).map((e) => e.id), [],
    'imported products have only product events')
  const created = full.filter((e) => e.type === 'order.created').map((e) => e.resourceId)
  t.equal(new Set(created).size, created.length, 'one order.created an order')
  t.equal(created.length, [...orders.values()].filter((o) => o.mine).length, 'for every order this key placed')
  t.same(full.filter((e) => rolledBackProbes.has(e.resourceId)).map((e) => e.id), [], 'rolled-back transactions left no event')
  const [rolledBackRows] = await execute<{ count: number }>(first.db, sql`
    select count(*)::int as count from change_events
    where resource_id::text in (${sql.join([...rolledBackProbes, 'none'].map((id) => sql`${id}`), sql`, `)})`)
  t.equal(rolledBackRows!.count, 0, 'nor any row')
  const [otherRows] = await execute<{ count: number }>(first.db, sql`
    select count(*)::int as count from change_events where type like 'order.%' and api_key_id is distinct from ${keyId}::uuid`)
  const otherOrders = [...orders.values()].filter((o) => !o.mine).length
  t.ok(otherRows!.count >= otherOrders, 'the other key\'s orders wrote their events')
  t.notOk(full.some((e) => e.type.startsWith('order.') && orders.get(e.resourceId)?.mine !== true), 'which this key never sees')

  // Commit order per order: created first, then each status change from the status before it.
  const rows = await execute<{ position: number, seq: number, batch: string }>(first.db, sql`
    select position::int, seq::int, published_at::text as batch from change_events where position is not null`)
  const stored = new Map(rows.map((r) => [r.position, r]))
  const where = (e: Event) => {
    const row = stored.get(positionOf(e.id))
    return row === undefined ? '' : ` (seq ${row.seq}, published ${row.batch})`
  }
  const chainProblems: string[] = []
  const statusOf = new Map<string, { status: string, event: Event }>()
  for (const e of full) {
    if (e.type === 'order.created') statusOf.set(e.resourceId, { status: String(e.data.status), event: e })
    if (e.type !== 'order.status_changed') continue
    const previous = statusOf.get(e.resourceId)
    if (previous === undefined) chainProblems.push(`${e.id}${where(e)}: a status change before its order.created`)
    else if (e.data.previousStatus !== previous.status) {
      chainProblems.push(`${e.id}${where(e)}: from ${String(e.data.previousStatus)}, but ${previous.event.id}${where(previous.event)} left it ${previous.status}`)
    }
    statusOf.set(e.resourceId, { status: String(e.data.status), event: e })
  }
  t.same(chainProblems, [], 'each order\'s events follow the order its changes committed in')
  if (chainProblems.length > 0) t.comment(chainProblems.join('\n'))

  if (usingPostgres) t.ok(inversions >= ENOUGH.inversions, `${inversions} events published after one that began later (the case under test happened)`)
  t.ok(enough(), 'every kind of writer wrote enough, and the reader polled enough')
  t.comment(`${((writingFrom - started) / 1000).toFixed(1)} s to set up, ${((writtenAt - writingFrom) / 1000).toFixed(1)} s writing, ${((Date.now() - started) / 1000).toFixed(1)} s in all: ` +
    `${orders.size} orders (${otherOrders} by the other key), ${statusChanges.length} status changes (${refusedStatus} refused), ${imports} imports, ` +
    `${committedProbes.size} probes committed and ${rolledBackProbes.size} rolled back; ${table!.total} events, ${full.length} visible to the reader, ` +
    `${inversions} published after an event that began later; ${polls} polls (${emptyPolls} empty)`)
})
