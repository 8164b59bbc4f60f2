// Test mode: a test key (sk_test_…) reads the live catalogue, and its orders run every check of
// a live order against the real stock but take none of it, and live and test orders never
// meet: not in lists, searches, lookups by id or number, nor the changes feed. The race of a
// live and a test key for the last units runs on real PostgreSQL only.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../app.ts'
import { execute } from '../../../db/client.ts'
import { isWellFormedSecret } from '../../../lib/api-key-secret.ts'
import type { CatalogProduct } from '../../../schemas/catalog-file.ts'
import { rollKey } from '../../../services/api-key-admin.ts'
import { publishChanges } from '../../../services/changes.ts'
import {
  authHeaders, buildTestApp, created, createTestDatabase, expectError, getJson, importProducts, line, makeKey, makeProduct, orderBody,
  orderSnapshot, postOrder, usingPostgres, UNLIMITED, type FullOrder, type OrderPage, type OrderSummary
} from '../../helper.ts'

interface Feed { items: Array<{ type: string, resourceId: string, data: Record<string, unknown> }>, nextCursor: string }

const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: '3600000' } })
const live = await makeKey(app, undefined, { name: 'live shop' })
const sandbox = await makeKey(app, undefined, { name: 'sandbox', mode: 'test' })

const id = () => crypto.randomUUID()
const RED = id()
const mug = makeProduct({ name: 'Sandbox Mug', price: 8, quantity: 5 })
const lamp = makeProduct({ name: 'Sandbox Lamp', price: 3.5, quantity: null })
const hidden = makeProduct({ name: 'Sandbox Hidden', price: 1, quantity: 3, isAvailable: false })
const shirt: CatalogProduct = {
  id: id(),
  name: 'Sandbox Shirt',
  price: 20,
  isAvailable: true,
  variants: [{ id: id(), name: 'Color', options: [{ id: RED, name: 'Red' }] }],
  combinations: [{ id: id(), optionIds: [RED], quantity: 2, price: 20, isAvailable: true }]
}
await importProducts(app, [mug, lamp, hidden, shirt])
const redShirt = shirt.combinations![0]!

/** Everything of the catalogue an order could change, as the database holds it. */
async function catalogueRows (target: App = app) {
  const products = await execute<{ id: string, quantity: number | null, available: boolean, content_hash: string | null, updated_at: string }>(target.database.db, sql`select id, quantity, available, content_hash, updated_at::text from products order by id`)
  const combinations = await execute(target.database.db, sql`select id, quantity from combinations order by id`)
  const [version] = await execute<{ version: string }>(target.database.db, sql`select last_value::text as version from catalog_version_seq`)
  return { products, combinations, version: version!.version }
}

async function feed (key: string, after = '') {
  await publishChanges(app.database)
  const res = await getJson(app, key, `/external/v1/changes${after === '' ? '' : `?after=${after}`}`)
  t.equal(res.statusCode, 200, res.body)
  return res.json<Feed>()
}

/** What a live key sees: its orders, the catalogue's lists with their validators, its feed. */
async function liveView () {
  const read = async (url: string) => {
    const res = await getJson(app, live.key, url)
    return { status: res.statusCode, etag: res.headers.etag, body: res.json() }
  }
  return {
    orders: await read('/external/v1/orders'),
    search: await read('/external/v1/orders?query=Ada'),
    products: await read('/external/v1/products'),
    mug: await read(`/external/v1/products/${mug.id}`),
    shirt: await read(`/external/v1/products/${shirt.id}`),
    feed: (await feed(live.key)).items
  }
}

t.test('a test key\'s secret says sk_test_, and it is a well-formed key', async (t) => {
  t.match(sandbox.key, /^sk_test_[A-Za-z0-9_-]{43}$/)
  t.equal(sandbox.mode, 'test')
  t.match(live.key, /^sk_[A-Za-z0-9_-]{43}$/)
  t.equal(live.mode, 'live')
  t.ok(isWellFormedSecret(sandbox.key) && isWellFormedSecret(live.key), 'both forms are accepted')
  t.notOk(isWellFormedSecret(`${sandbox.key}x`), 'a test secret of the wrong length is not')
  const [row] = await execute<{ mode: string }>(app.database.db, sql`select mode from api_keys where id = ${sandbox.id}`)
  t.equal(row!.mode, 'test', 'the mode is the key\'s stored column')
})

t.test('rolling a test key gives it a new test secret, its orders still test orders', async (t) => {
  const rolled = await makeKey(app, undefined, { mode: 'test', name: 'rolled sandbox' })
  const { key } = await rollKey(app.database, rolled.id, 0)
  t.match(key, /^sk_test_[A-Za-z0-9_-]{43}$/)
  const order = await created(t, await postOrder(app, key, orderBody([line(lamp, 1)])))
  t.match(order, { mode: 'test', orderNumber: /^T\d+$/ })
  const { key: liveRolled } = await rollKey(app.database, (await makeKey(app)).id, 0)
  t.notMatch(liveRolled, /^sk_test_/, 'a live key stays a live key')
})

t.test('a test key reads the live catalogue exactly as a live key does', async (t) => {
  for (const url of ['/external/v1/products', `/external/v1/products/${shirt.id}`, '/external/v1/products?query=sandbox', '/external/v1/categories', '/external/v1/brands']) {
    const [a, b] = [await getJson(app, live.key, url), await getJson(app, sandbox.key, url)]
    t.equal(b.statusCode, 200, url)
    t.same(b.json(), a.json(), `${url}: the same answer`)
    t.equal(b.headers.etag, a.headers.etag, `${url}: the same ETag`)
  }
})

t.test('a test order runs every check of a live order, with the same answers', async (t) => {
  const bodies: Array<[string, unknown]> = [
    ['no customer', { customerPhone: '+12133734253', items: [line(lamp, 1)] }],
    ['no items', orderBody(undefined)],
    ['a bad product id', orderBody([{ productId: 'nope' }])],
    ['a bad quantity', orderBody([line(lamp, 0)])],
    ['a bad phone', orderBody([line(lamp, 1)], { customerPhone: '12' })],
    ['an unknown product', orderBody([line({ id: id() }, 1)])],
    ['more than the stock, over two lines', orderBody([line(mug, 3), line(mug, 3)])],
    ['an unavailable product', orderBody([line(hidden, 1)])],
    ['a product that has combinations', orderBody([line(shirt, 1)])],
    ['a combination of another product', orderBody([line(mug, 1, redShirt.id)])],
    ['a schema failure', orderBody([line(lamp, 1)], { address: { latitude: 91 } })],
    ['not JSON', '{"customerName":']
  ]
  for (const [what, body] of bodies) {
    const before = await orderSnapshot(app)
    const a = await postOrder(app, live.key, body)
    const b = await postOrder(app, sandbox.key, body)
    t.not(b.statusCode, 201, `${what}: refused`)
    t.equal(b.statusCode, a.statusCode, `${what}: the same status`)
    const { requestId: _a, ...liveBody } = a.json<Record<string, unknown>>()
    const { requestId: _b, ...testBody } = b.json<Record<string, unknown>>()
    t.same(testBody, liveBody, `${what}: the same code, message and details`)
    t.same(await orderSnapshot(app), before, `${what}: nothing changed`)
  }
  const res = await postOrder(app, sandbox.key, orderBody([line(mug, 6)]))
  expectError(t, res, 400, 'order_creation_failed', { details: true })
  t.match(res.json(), { details: [{ reason: 'out_of_stock', available: 5 }] }, 'out_of_stock against the real stock')
})

t.test('a test order takes no stock and changes nothing a live key or the catalogue shows', async (t) => {
  const start = (await feed(live.key)).nextCursor
  const rows = await catalogueRows()
  const view = await liveView()

  const order = await created<FullOrder>(t, await postOrder(app, sandbox.key, orderBody([line(mug, 5), line(lamp, 2), line(shirt, 2, redShirt.id)])))
  t.match(order, { mode: 'test', orderNumber: /^T1\d{5}$/, status: 'pending', productsCount: 9, total: 40 + 7 + 40 }, 'priced as a live order')
  const again = await created(t, await postOrder(app, sandbox.key, orderBody([line(mug, 5)])))
  t.equal(again.orderNumber, `T${Number(order.orderNumber.slice(1)) + 1}`, 'test numbers follow each other')

  t.same(await catalogueRows(), rows, 'stock, availability, updatedAt and the catalogue version are as they were')
  t.same(await liveView(), view, 'a live key\'s orders, catalogue and feed are as they were')
  t.same((await feed(live.key, start)).items, [], 'no product.updated, nothing for the live key')

  // The stock is all still there for live orders.
  const sold = await created(t, await postOrder(app, live.key, orderBody([line(mug, 5), line(shirt, 2, redShirt.id)])))
  t.match(sold, { mode: 'live', orderNumber: /^[1-9]\d+$/ })
  const [left] = await execute<{ quantity: number }>(app.database.db, sql`select quantity from products where id = ${mug.id}`)
  t.equal(left!.quantity, 0, 'the live order took the five units the test orders did not')
  const soldOut = await postOrder(app, sandbox.key, orderBody([line(mug, 1)]))
  t.match(soldOut.json(), { error: 'order_creation_failed', details: [{ reason: 'out_of_stock', available: 0 }] }, 'and test orders now see it sold out')
  await importProducts(app, [mug, shirt])
})

t.test('live and test orders never meet', async (t) => {
  const liveOrder = await created(t, await postOrder(app, live.key, orderBody([line(lamp, 1)], { customerName: 'Ada Both' })))
  const testOrder = await created(t, await postOrder(app, sandbox.key, orderBody([line(lamp, 1)], { customerName: 'Ada Both' })))
  const digits = testOrder.orderNumber.slice(1)

  // A live order with the same digits as the test one exists once the live sequence gets there.
  const [{ n }] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from orders where order_number = ${Number(digits)}`) as [{ n: number }]
  t.ok(n >= 1, 'the test number\'s digits are counted apart from the live sequence')

  const list = async (key: string, query = '') => (await getJson(app, key, `/external/v1/orders${query}`)).json<OrderPage>()
  const liveList = await list(live.key)
  const testList = await list(sandbox.key)
  t.ok(liveList.items.every((o) => o.mode === 'live') && liveList.items.some((o) => o.id === liveOrder.id), 'the live list: live orders only')
  t.ok(testList.items.every((o) => o.mode === 'test') && testList.items.some((o) => o.id === testOrder.id), 'the test list: test orders only')
  t.equal(testList.total, testList.items.length)

  for (const query of ['Ada Both', testOrder.orderNumber, testOrder.orderNumber.toLowerCase(), testOrder.orderNumber.slice(0, 4)]) {
    t.same((await list(live.key, `?query=${encodeURIComponent(query)}`)).items.map((o) => o.id).filter((i) => i === testOrder.id), [], `live search ${query}: not the test order`)
  }
  t.same((await list(sandbox.key, `?query=${encodeURIComponent('Ada Both')}`)).items.map((o) => o.id), [testOrder.id], 'test search by name: its own only')
  t.same((await list(sandbox.key, `?query=${testOrder.orderNumber}`)).items.map((o) => o.id), [testOrder.id], 'test search by number')
  t.same((await list(sandbox.key, `?query=${testOrder.orderNumber.slice(0, 4).toLowerCase()}`)).items.map((o) => o.id).includes(testOrder.id), true, 'test search by a number prefix, any case')
  t.same((await list(sandbox.key, `?query=${liveOrder.orderNumber}`)).items, [], 'test search by a live number: nothing')
  t.same((await list(sandbox.key, `?query=${digits}`)).items, [], 'the test number\'s digits alone name a live order, not it')

  const get = (key: string, which: string) => getJson(app, key, `/external/v1/orders/${which}`)
  expectError(t, await get(live.key, testOrder.id), 404, 'order_not_found')
  expectError(t, await get(live.key, testOrder.orderNumber), 404, 'order_not_found')
  expectError(t, await get(sandbox.key, liveOrder.id), 404, 'order_not_found')
  expectError(t, await get(sandbox.key, liveOrder.orderNumber), 404, 'order_not_found')
  expectError(t, await get(sandbox.key, digits), 404, 'order_not_found')
  const byNumber = await get(sandbox.key, testOrder.orderNumber)
  t.equal(byNumber.statusCode, 200)
  t.match(byNumber.json(), { id: testOrder.id, mode: 'test', orderNumber: testOrder.orderNumber })
  t.equal((await get(sandbox.key, testOrder.orderNumber.toLowerCase())).json<OrderSummary>().id, testOrder.id, 't… is read as T…')
  t.equal((await get(sandbox.key, testOrder.id)).json<OrderSummary>().mode, 'test')
  t.equal((await get(live.key, liveOrder.orderNumber)).json<OrderSummary>().mode, 'live')

  const seen = async (key: string) => (await feed(key)).items.filter((e) => e.type.startsWith('order.')).map((e) => e.resourceId)
  const liveSeen = await seen(live.key)
  const testSeen = await seen(sandbox.key)
  t.ok(liveSeen.includes(liveOrder.id) && !liveSeen.includes(testOrder.id), 'the live feed: not the test order')
  t.ok(testSeen.includes(testOrder.id) && !testSeen.includes(liveOrder.id), 'the test feed: its order, not the live one')
  const event = (await feed(sandbox.key)).items.find((e) => e.resourceId === testOrder.id)
  t.same(event?.data, { orderNumber: testOrder.orderNumber, status: 'pending' }, 'the event names the test number')
})

t.test('scopes and rate limits as in live mode', async (t) => {
  const { key: noCreate } = await makeKey(app, ['orders:list'], { mode: 'test' })
  expectError(t, await postOrder(app, noCreate, orderBody([line(lamp, 1)])), 403, 'insufficient_scope', { message: /orders:create/ })
  const { key: once } = await makeKey(app, undefined, { mode: 'test', rateLimit: 1 })
  t.equal((await getJson(app, once, '/external/v1/orders')).statusCode, 200)
  const limited = await app.inject({ url: '/external/v1/orders', headers: authHeaders(once) })
  expectError(t, limited, 429, 'rate_limit_exceeded')
})

t.test('a live and a test key racing for the last units: the live orders get exactly the stock', {
  skip: usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite is one connection, so nothing races'
}, async (t) => {
  const { database } = await createTestDatabase(t, { poolSize: 30 })
  // Events are published by the test, so each snapshot below follows every announcement.
  const racing = await buildTestApp(t, { database, env: { ...UNLIMITED, EVENT_PUBLISH_MS: '3600000' } })
  const liveKey = await makeKey(racing)
  const testKey = await makeKey(racing, undefined, { mode: 'test' })
  const vase = makeProduct({ name: 'Last Vases', price: 5, quantity: 8 })
  const other = makeProduct({ name: 'Untouched Bowl', price: 5, quantity: 4 })
  await importProducts(racing, [vase, other])
  const before = await catalogueRows(racing)
  const liveList = (await getJson(racing, liveKey.key, '/external/v1/orders')).body

  const send = (key: string) => postOrder(racing, key, orderBody([line(vase, 1)]))
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => send(i % 2 === 0 ? liveKey.key : testKey.key).then((res) => ({ i, res }))))
  const liveAnswers = answers.filter((a) => a.i % 2 === 0).map((a) => a.res)
  const testAnswers = answers.filter((a) => a.i % 2 === 1).map((a) => a.res)
  t.equal(liveAnswers.filter((r) => r.statusCode === 201).length, 8, 'exactly the stock went to live orders')
  t.ok(liveAnswers.every((r) => r.statusCode === 201 || r.json<{ error: string }>().error === 'order_creation_failed'), 'the others sold out')
  t.ok(testAnswers.every((r) => r.statusCode === 201 || r.json<{ error: string }>().error === 'order_creation_failed'), 'test orders: made, or sold out as the stock said')
  t.ok(testAnswers.every((r) => r.statusCode !== 201 || r.json<OrderSummary>().mode === 'test'))

  const after = await catalogueRows(racing)
  const [units] = await execute<{ n: number }>(racing.database.db, sql`select coalesce(sum(i.quantity), 0)::int as n from order_items i join orders o on o.id = i.order_id where o.mode = 'live'`)
  t.equal(units!.n, 8, 'live orders hold the 8 units')
  t.same(after.products.find((p) => p.id === vase.id), { ...before.products.find((p) => p.id === vase.id), quantity: 0, available: false, content_hash: null, updated_at: after.products.find((p) => p.id === vase.id)!.updated_at }, 'the vase: sold out by live orders only')
  t.same(after.products.find((p) => p.id === other.id), before.products.find((p) => p.id === other.id), 'another product: as it was')

  // Test orders alone, on the other product: nothing of it moves, and the live list stays as it was.
  await publishChanges(racing.database)
  const rows = await catalogueRows(racing)
  const tests = await Promise.all(Array.from({ length: 20 }, () => postOrder(racing, testKey.key, orderBody([line(other, 4)]))))
  t.ok(tests.every((r) => r.statusCode === 201), 'every test order of the whole stock is made: none takes any')
  t.ok(await publishChanges(racing.database) >= 20, 'their events are published')
  const untouched = await catalogueRows(racing)
  t.same(untouched.products, rows.products, 'the products and their stock are as they were')
  t.same(untouched.combinations, rows.combinations)
  t.equal(untouched.version, rows.version, 'no catalogue change was announced')
  const liveNow = await getJson(racing, liveKey.key, '/external/v1/orders')
  t.not(liveNow.body, liveList, 'the live list has the live orders')
  t.ok(liveNow.json<OrderPage>().items.every((o) => o.mode === 'live'))
  t.equal(liveNow.json<OrderPage>().total, 8, 'and only them')
})
