import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { recordEvents } from '../../db/events.ts'
import { positionOfEventId } from '../../lib/event-id.ts'
import { publishChanges, forgetOldChanges } from '../../services/changes.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { authHeaders, buildTestApp, created, expectError, importProducts, line, makeKey, makeProduct, orderBody, postOrder, UNLIMITED } from '../helper.ts'

interface Event { id: string, type: string, resourceId: string, occurredAt: string, data: Record<string, unknown> }
interface Feed { items: Event[], nextCursor: string, hasMore: boolean }

// Events show as soon as they are published; publishing is driven by the test.
const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: '3600000' } })
const { key: both } = await makeKey(app, ['products:list', 'orders:list', 'orders:create'])
const { key: productsOnly } = await makeKey(app, ['products:list'])
const { key: ordersOnly } = await makeKey(app, ['orders:list', 'orders:create'])
const { key: neither } = await makeKey(app, ['products:find'])

async function feed (key: string, query = '') {
  await publishChanges(app.database)
  const res = await app.inject({ url: `/external/v1/changes${query}`, headers: authHeaders(key) })
  t.equal(res.statusCode, 200, `GET /changes${query}: ${res.statusCode === 200 ? 'ok' : res.body}`)
  return res.json<Feed>()
}

const head = async (key: string) => (await feed(key, '?limit=0')).nextCursor

const mug = makeProduct({ name: 'Feed Mug', price: 10, quantity: 10 })
const lamp = makeProduct({ name: 'Feed Lamp', price: 5, quantity: null })
await importProducts(app, [mug, lamp])

t.test('an order writes order.created and product.updated for the stock it took', async (t) => {
  const start = await head(both)
  const order = await created(t, await postOrder(app, both, orderBody([line(mug, 2), line(lamp, 1)])))
  const { items, nextCursor, hasMore } = await feed(both, `?after=${start}`)
  t.same(items.map((e) => [e.type, e.resourceId]), [['product.updated', mug.id], ['order.created', order.id]],
    'untracked stock (the lamp) is no change to its product')
  t.same(items[0]!.data, {})
  t.same(items[1]!.data, { orderNumber: order.orderNumber, status: 'pending' })
  t.match(items[0]!.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(nextCursor, items[1]!.id, 'the next cursor is the last event returned')
  t.equal(hasMore, false)
  const again = await feed(both, `?after=${nextCursor}`)
  t.same(again, { items: [], nextCursor, hasMore: false }, 'nothing new: the cursor sent comes back')
})

t.test('a status change writes order.status_changed', async (t) => {
  const order = await created(t, await postOrder(app, both, orderBody([line(lamp, 1)])))
  const start = await head(both)
  const change = await setOrderStatus(app.database, order.orderNumber, 'confirmed')
  t.equal(change.ok, true)
  const { items } = await feed(both, `?after=${start}`)
  t.same(items.map((e) => ({ type: e.type, resourceId: e.resourceId, data: e.data })), [{
    type: 'order.status_changed',
    resourceId: order.id,
    data: { orderNumber: order.orderNumber, status: 'confirmed', previousStatus: 'pending' }
  }])
})

t.test('a key sees product events with products:list and only its own orders with orders:list', async (t) => {
  const starts = { both: await head(both), products: await head(productsOnly), orders: await head(ordersOnly) }
  const mine = await created(t, await postOrder(app, ordersOnly, orderBody([line(mug, 1)])))
  const theirs = await created(t, await postOrder(app, both, orderBody([line(mug, 1)])))
  const seen = async (key: string, after: string) => (await feed(key, `?after=${after}`)).items.map((e) => `${e.type} ${e.resourceId}`)
  t.same(await seen(productsOnly, starts.products), [`product.updated ${mug.id}`, `product.updated ${mug.id}`])
  t.same(await seen(ordersOnly, starts.orders), [`order.created ${mine.id}`], 'not the other key\'s order, no product events')
  t.same(await seen(both, starts.both), [`product.updated ${mug.id}`, `product.updated ${mug.id}`, `order.created ${theirs.id}`])
  expectError(t, await app.inject({ url: '/external/v1/changes', headers: authHeaders(neither) }), 403, 'insufficient_scope')
})

t.test('limit pages through the feed in order, each event once', async (t) => {
  const start = await head(both)
  for (let i = 0; i < 5; i++) await created(t, await postOrder(app, both, orderBody([line(lamp, 1)])))
  const seen: string[] = []
  let cursor = start
  for (;;) {
    const page = await feed(both, `?after=${cursor}&limit=2`)
    t.ok(page.items.length <= 2)
    seen.push(...page.items.map((e) => e.id))
    cursor = page.nextCursor
    if (!page.hasMore) break
  }
  t.equal(seen.length, 5)
  t.equal(new Set(seen).size, 5)
  const all = (await feed(both, `?after=${start}&limit=500`)).items.map((e) => e.id)
  t.same(seen, all, 'the same sequence as one read')
})

t.test('limit=0 answers the head of the feed; no after starts at the oldest event', async (t) => {
  const top = await feed(both, '?limit=0')
  t.same(top.items, [])
  t.equal(top.hasMore, false)
  const fromStart = await feed(both, '?limit=500')
  t.equal(fromStart.items[0]!.id, 'evt_1', 'the first event ever')
  t.equal(fromStart.items.at(-1)!.id, top.nextCursor, 'the head is the newest event')
})

t.test('bad cursors and limits answer clear errors', async (t) => {
  const get = (query: string) => app.inject({ url: `/external/v1/changes${query}`, headers: authHeaders(both) })
  for (const after of ['garbage', 'evt_', 'evt_-1', 'evt_01', 'evt_1.5', 'evt_99999999999', 'x'.repeat(1000)]) {
    expectError(t, await get(`?after=${encodeURIComponent(after)}`), 400, 'invalid_cursor', { what: after.slice(0, 20) })
  }
  expectError(t, await get(`?after=${'x'.repeat(1001)}`), 400, 'validation_failed', { details: true })
  for (const limit of ['-1', '501', '1.5', 'ten']) expectError(t, await get(`?limit=${limit}`), 400, 'validation_failed', { what: limit, details: true })
})

t.test('events past their retention are deleted; a cursor before them has expired', async (t) => {
  const fresh = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: '3600000' } })
  const { key } = await makeKey(fresh, ['products:list'])
  await recordEvents(fresh.database.db, [1, 2, 3].map(() => ({ type: 'product.updated' as const, resourceId: crypto.randomUUID() })))
  await publishChanges(fresh.database)
  await execute(fresh.database.db, sql`update change_events set occurred_at = now() - interval '40 days' where position <= 2`)
  t.equal(await forgetOldChanges(fresh.database, 30), 2, 'the two old events go')
  t.equal(await forgetOldChanges(fresh.database, 30), 0, 'a second run finds nothing')
  const get = (query: string) => fresh.inject({ url: `/external/v1/changes${query}`, headers: authHeaders(key) })
  const res = expectError(t, await get('?after=evt_1'), 410, 'cursor_expired')
  t.match(res.message, /read the lists again/)
  t.same((await get('?after=evt_2')).json<Feed>().items.map((e) => e.id), ['evt_3'], 'the last deleted position is still a valid cursor')
  t.same((await get('')).json<Feed>().items.map((e) => e.id), ['evt_3'], 'without after, from the oldest kept event')
  await execute(fresh.database.db, sql`update change_events set occurred_at = now() - interval '40 days'`)
  t.equal(await forgetOldChanges(fresh.database, 30), 0, 'the newest event always stays, so positions keep counting')
})

t.test('unpublished and unsettled events are not shown', async (t) => {
  const slow = await buildTestApp(t, { database: app.database, env: { ...UNLIMITED, READ_SETTLE_MS: '60000', EVENT_PUBLISH_MS: '3600000' } })
  const start = await head(both)
  await created(t, await postOrder(app, both, orderBody([line(lamp, 1)])))
  const before = await app.inject({ url: `/external/v1/changes?after=${start}`, headers: authHeaders(both) })
  t.same(before.json<Feed>().items, [], 'not yet published')
  await publishChanges(app.database)
  const settling = await slow.inject({ url: `/external/v1/changes?after=${start}`, headers: authHeaders(both) })
  t.same(settling.json<Feed>().items, [], 'published, but younger than the settle time')
  const slowHead = (await slow.inject({ url: '/external/v1/changes?limit=0', headers: authHeaders(both) })).json<Feed>().nextCursor
  t.ok(positionOfEventId(slowHead)! <= positionOfEventId(start)!, 'nor is it the head yet')
  t.equal((await feed(both, `?after=${start}`)).items.length, 1)
})
