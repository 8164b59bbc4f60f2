import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../app.ts'
import { execute } from '../../../db/client.ts'
import { deleteExpiredIdempotencyKeys } from '../../../db/orders.ts'
import { writeSetting } from '../../../db/settings.ts'
import { SCOPES, type Scope } from '../../../lib/api-key-secret.ts'
import type { CatalogProduct } from '../../../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct } from '../../helper.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

// Rate limiting is tested elsewhere; here it must never interfere.
const ENV = { RATE_LIMIT_MAX: '1000000' }
const PHONE = '+12133734253'
const UK_PHONE = '+442079460958'
const SUMMARY_KEYS = ['address', 'customerName', 'customerPhone', 'date', 'deliveryFee', 'finalTotal', 'id', 'note', 'orderNumber', 'productsCount', 'status', 'total', 'updatedAt']
const ITEM_KEYS = ['combinationId', 'name', 'productId', 'quantity', 'singlePrice', 'totalPrice']
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

interface Summary {
  id: string
  orderNumber: string
  status: string
  total: number
  finalTotal: number
  productsCount: number
  date: string
  customerName: string
  customerPhone: string | null
  note: string | null
}
interface Item { productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: number, totalPrice: number }
interface Full extends Summary { items: Item[] }
interface OrderPage { items: Summary[], page: number, pageSize: number, total: number }

// ---------------------------------------------------------------------------------------
// Test-only helpers

async function postOrder (app: App, key: string, body: unknown, headers: Record<string, string | undefined> = {}) {
  const all: Record<string, string> = { ...authHeaders(key), 'content-type': 'application/json' }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) delete all[name]
    else all[name] = value
  }
  return app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: all,
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) })
  })
}
type Res = Awaited<ReturnType<typeof postOrder>>

async function getJson (app: App, key: string, url: string) {
  return app.inject({ method: 'GET', url, headers: authHeaders(key) })
}

interface Line { productId: string, combinationId?: string | null, quantity?: number }

/** A valid create-order body with the given lines. */
function orderBody (items: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { customerName: 'Ada Lovelace', customerPhone: PHONE, items, ...extra }
}

const line = (product: { id: string }, quantity?: number, combinationId?: string | null): Line => ({
  productId: product.id,
  ...(combinationId === undefined ? {} : { combinationId }),
  ...(quantity === undefined ? {} : { quantity })
})

/** Everything an order can change: order rows, items, stock, idempotency records. */
async function snapshot (app: App) {
  const db = app.database.db
  const [counts] = await execute<{ orders: number, items: number, idem: number }>(db, sql`
    select (select count(*)::int from orders) as orders,
           (select count(*)::int from order_items) as items,
           (select count(*)::int from idempotency_keys) as idem`)
  const products = await execute<{ id: string, quantity: number | null }>(db, sql`select id, quantity from products order by id`)
  const combinations = await execute<{ id: string, quantity: number | null }>(db, sql`select id, quantity from combinations order by id`)
  return { ...counts!, products, combinations }
}

async function productStock (app: App, id: string): Promise<number | null> {
  const [row] = await execute<{ quantity: number | null }>(app.database.db, sql`select quantity from products where id = ${id}`)
  return row!.quantity
}

async function combinationStock (app: App, id: string): Promise<number | null> {
  const [row] = await execute<{ quantity: number | null }>(app.database.db, sql`select quantity from combinations where id = ${id}`)
  return row!.quantity
}

async function orderRow (app: App, id: string) {
  const [row] = await execute<{ customer_phone: string | null, address: { phone?: string } | null, delivery_fee: string }>(
    app.database.db, sql`select customer_phone, address, delivery_fee::text as delivery_fee from orders where id = ${id}`)
  return row
}

/** Asserts the error status, code and body shape ({ error, message, requestId }, details only on validation_failed and per-line order_creation_failed). */
function checkError (t: T, res: Res, status: number, code: string, message?: RegExp) {
  t.equal(res.statusCode, status, `status ${status}`)
  const body = res.json<Record<string, unknown>>()
  t.equal(body.error, code, `error ${code}`)
  t.type(body.message, 'string')
  t.ok((body.message as string).length > 0, 'a message')
  if (message) t.match(body.message, message)
  t.equal(body.requestId, res.headers['request-id'], 'requestId is the Request-Id header')
  t.ok(String(body.requestId).length > 0, 'a requestId')
  if (code === 'validation_failed' || (code === 'order_creation_failed' && body.details !== undefined)) {
    t.same(Object.keys(body).sort(), ['details', 'error', 'message', 'requestId'])
    t.ok(Array.isArray(body.details) && (body.details as unknown[]).length > 0, `details on ${code}`)
  } else {
    t.same(Object.keys(body).sort(), ['error', 'message', 'requestId'])
  }
  t.match(String(res.headers['content-type']), /^application\/json/)
}

/** Sends the request and checks the error and that nothing at all changed. */
async function expectRefused (t: T, app: App, send: () => Promise<Res>, status: number, code: string, message?: RegExp) {
  const before = await snapshot(app)
  const res = await send()
  checkError(t, res, status, code, message)
  t.same(await snapshot(app), before, 'nothing changed: no order, no stock taken, no idempotency record')
  return res
}

async function created (t: T, res: Res): Promise<Summary> {
  t.equal(res.statusCode, 201, res.statusCode === 201 ? 'created' : `created, got ${res.body}`)
  return res.json<Summary>()
}

/** Newest first, then id. */
const newestFirst = (a: Summary, b: Summary) => (a.date === b.date ? (a.id < b.id ? 1 : -1) : (a.date < b.date ? 1 : -1))

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------------------
// The store used by every test in this file.

const app = await buildTestApp(t, { env: ENV })
const { key, id: keyId } = await makeKey(app)
const { key: otherKey } = await makeKey(app, [...SCOPES], { name: 'other integrator' })

const id = () => randomUUID()
const V_COLOR = id(); const RED = id(); const BLUE = id()
const V_SIZE = id(); const SMALL = id(); const LARGE = id()
const RED_L = id(); const BLUE_S = id(); const RED_S = id(); const BLUE_L = id()
const CAP_ONE = id(); const HIDDEN_SHIRT_ONE = id()

const plain = makeProduct({ name: 'Plain Mug', price: 10, quantity: 10 })
const dime = makeProduct({ name: 'Dime Sticker', price: 0.1, quantity: null })
const pricey = makeProduct({ name: 'Pricey Pen', price: 19.99, quantity: null })
const hidden = makeProduct({ name: 'Hidden Lamp', price: 10, quantity: 10, isAvailable: false })
const shirt: CatalogProduct = {
  id: id(),
  name: 'Shirt',
  price: 20,
  isAvailable: true,
  variants: [
    { id: V_COLOR, name: 'Color', options: [{ id: RED, name: 'Red' }, { id: BLUE, name: 'Blue' }] },
    { id: V_SIZE, name: 'Size', options: [{ id: SMALL, name: 'S' }, { id: LARGE, name: 'L' }] }
  ],
  combinations: [
    // Option ids deliberately listed size first: item names follow the variants' order.
    { id: RED_L, optionIds: [LARGE, RED], price: 20, discount: { type: 'percentage', value: 25 }, quantity: 5, isAvailable: true },
    { id: BLUE_S, optionIds: [SMALL, BLUE], price: 1.15, discount: { type: 'percentage', value: 50 }, quantity: null, isAvailable: true },
    { id: RED_S, optionIds: [RED, SMALL], price: 20, quantity: 5, isAvailable: false },
    { id: BLUE_L, optionIds: [BLUE, LARGE], price: 30, quantity: 2, isAvailable: true }
  ]
}
// A combination without a discount of its own takes its product's.
const capVariant = id(); const capOption = id()
const cap: CatalogProduct = {
  id: id(),
  name: 'Cap',
  price: 12,
  discount: { type: 'amount', value: 2 },
  isAvailable: true,
  variants: [{ id: capVariant, name: 'Size', options: [{ id: capOption, name: 'One size' }] }],
  combinations: [{ id: CAP_ONE, optionIds: [capOption], price: 12, quantity: null, isAvailable: true }]
}
// An unavailable product whose combination is available.
const hsVariant = id(); const hsOption = id()
const hiddenShirt: CatalogProduct = {
  id: id(),
  name: 'Hidden Shirt',
  price: 10,
  isAvailable: false,
  variants: [{ id: hsVariant, name: 'Size', options: [{ id: hsOption, name: 'M' }] }],
  combinations: [{ id: HIDDEN_SHIRT_ONE, optionIds: [hsOption], price: 10, quantity: 10, isAvailable: true }]
}
await importProducts(app, [plain, dime, pricey, hidden, shirt, cap, hiddenShirt])

// ---------------------------------------------------------------------------------------

t.test('create order: every error code, in the contract order, changing nothing', async (t) => {
  const post = (body: unknown, headers?: Record<string, string | undefined>) => () => postOrder(app, key, body, headers)
  // Every code of this section answers 400.
  const refused = (t: T, body: unknown, code: string, message?: RegExp) => expectRefused(t, app, post(body), 400, code, message)

  const good = [line(plain, 1)]
  const { customerName: _n, ...noName } = orderBody(good)
  const { items: _i, ...noItems } = orderBody(good)
  const { customerPhone: _p, ...noPhone } = orderBody(good)

  t.test('customer_name_required', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['missing', noName],
      ['empty', orderBody(good, { customerName: '' })],
      ['whitespace only', orderBody(good, { customerName: ' \t\n ' })],
      ['a number', orderBody(good, { customerName: 42 })],
      ['null', orderBody(good, { customerName: null })],
      ['an array', orderBody(good, { customerName: ['Ada'] })],
      ['an object', orderBody(good, { customerName: { first: 'Ada' } })]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'customer_name_required', /customerName/) })
    }
  })

  t.test('items_required', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['missing', noItems],
      ['an empty array', orderBody([])],
      ['an object, not an array', orderBody({ productId: plain.id })],
      ['a string', orderBody('plain')],
      ['null', orderBody(null)]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'items_required', /items/) })
    }
  })

  t.test('invalid_item', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['productId not a GUID', orderBody([{ productId: 'not-a-guid', quantity: 1 }])],
      ['productId almost a GUID', orderBody([{ productId: `${plain.id}0` }])],
      ['productId missing', orderBody([{ quantity: 1 }])],
      ['productId a number', orderBody([{ productId: 12 }])],
      ['an item that is not an object', orderBody(['x'])],
      ['an item that is null', orderBody([null])],
      ['the second line has a bad productId', orderBody([line(plain, 1), { productId: 'nope' }])],
      ['a GUID matching no product', orderBody([line({ id: randomUUID() }, 1)])],
      ['a GUID matching no product on the second line', orderBody([line(plain, 1), line({ id: randomUUID() }, 1)])]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'invalid_item') })
    }
  })

  t.test('invalid_quantity', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['0', 0], ['-1', -1], ['1.5', 1.5], ['the string "2"', '2'], ['null', null], ['100001', 100001], ['true', true], ['an array', [1]]
    ]
    for (const [name, quantity] of cases) {
      await t.test(name, async (t) => {
        await refused(t, orderBody([{ productId: plain.id, quantity }]), 'invalid_quantity', /quantity/)
      })
    }
    await t.test('on a second line', async (t) => {
      await refused(t, orderBody([line(plain, 1), { productId: dime.id, quantity: 0 }]), 'invalid_quantity')
    })
  })

  t.test('invalid_phone_number', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['customerPhone missing', noPhone],
      ['customerPhone empty', orderBody(good, { customerPhone: '' })],
      ['customerPhone blank', orderBody(good, { customerPhone: '   ' })],
      ['customerPhone a number', orderBody(good, { customerPhone: 12133734253 })],
      ['customerPhone null', orderBody(good, { customerPhone: null })],
      ['customerPhone too short', orderBody(good, { customerPhone: '+1213' })],
      ['customerPhone letters', orderBody(good, { customerPhone: 'call me maybe' })],
      ['a national number without country nor store default', orderBody(good, { customerPhone: '(213) 373-4253' })],
      ['a national number with a country that is not alpha-2', orderBody(good, { customerPhone: '(213) 373-4253', address: { country: 'United States' } })],
      ['a national number of another country than address.country', orderBody(good, { customerPhone: '030 12345678', address: { country: 'US' } })],
      ['a bad address.phone beside a good customerPhone', orderBody(good, { address: { city: 'Berlin', phone: 'not a phone' } })],
      ['a blank address.phone', orderBody(good, { address: { phone: ' ' } })],
      ['a national address.phone without a region', orderBody(good, { address: { phone: '2133734253' } })]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'invalid_phone_number', /phone/) })
    }
  })

  t.test('the first failing check answers', async (t) => {
    const cases: Array<[string, unknown, string]> = [
      ['blank name and empty items', orderBody([], { customerName: ' ' }), 'customer_name_required'],
      ['a non-string name and a bad productId', orderBody([{ productId: 'x' }], { customerName: 7 }), 'customer_name_required'],
      ['missing name and a bad phone', { items: good, customerPhone: 'x' }, 'customer_name_required'],
      ['items not an array and a bad phone', orderBody('x', { customerPhone: 'x' }), 'items_required'],
      ['empty items and a bad phone', orderBody([], { customerPhone: '' }), 'items_required'],
      ['a bad productId and a bad quantity', orderBody([{ productId: 'x', quantity: 0 }]), 'invalid_item'],
      ['a bad quantity on line 1, a bad productId on line 2', orderBody([line(plain, 0), { productId: 'x' }]), 'invalid_item'],
      ['a bad quantity and a bad phone', orderBody([line(plain, 0)], { customerPhone: 'x' }), 'invalid_quantity'],
      ['a bad quantity and an unknown product', orderBody([line({ id: randomUUID() }, 1.5)]), 'invalid_quantity'],
      ['a bad phone and an unknown product', orderBody([line({ id: randomUUID() }, 1)], { customerPhone: '' }), 'invalid_phone_number'],
      ['a bad phone and not enough stock', orderBody([line(plain, 1000)], { customerPhone: '123' }), 'invalid_phone_number'],
      ['a bad phone and an unavailable product', orderBody([line(hidden, 1)], { customerPhone: '123' }), 'invalid_phone_number'],
      ['a bad phone and another schema error', orderBody(good, { customerPhone: '123', note: 42 }), 'invalid_phone_number'],
      ['a schema error and not enough stock', orderBody([line(plain, 1000)], { note: 42 }), 'validation_failed'],
      ['a schema error and an unknown product', orderBody([line({ id: randomUUID() }, 1)], { note: 42 }), 'validation_failed'],
      // Catalogue checks: invalid_item for unknown products comes before order_creation_failed.
      ['an unavailable product on line 1, an unknown product on line 2', orderBody([line(hidden, 1), line({ id: randomUUID() }, 1)]), 'invalid_item']
    ]
    for (const [name, body, code] of cases) {
      await t.test(name, async (t) => { await refused(t, body, code) })
    }
  })

  t.test('order_creation_failed, with the reason in the message', async (t) => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['not enough stock', orderBody([line(plain, 11)]), /stock/i],
      ['two lines of the same product whose sum exceeds stock', orderBody([line(plain, 6), line(dime, 1), line(plain, 5)]), /stock/i],
      ['two lines of the same combination whose sum exceeds stock', orderBody([line(shirt, 3, RED_L), line(shirt, 3, RED_L)]), /stock/i],
      ['not enough stock of a combination', orderBody([line(shirt, 3, BLUE_L)]), /stock/i],
      ['an unavailable product', orderBody([line(hidden, 1)]), /not available/i],
      ['an unavailable combination', orderBody([line(shirt, 1, RED_S)]), /not available/i],
      ['an available combination of an unavailable product', orderBody([line(hiddenShirt, 1, HIDDEN_SHIRT_ONE)]), /not available/i],
      ['a product with combinations but no combinationId', orderBody([line(shirt, 1)]), /combination/i],
      ['a product with combinations and combinationId null', orderBody([line(shirt, 1, null)]), /combination/i],
      ['a combinationId of another product', orderBody([line(shirt, 1, CAP_ONE)]), /combination/i],
      ['a combinationId on a product without combinations', orderBody([line(plain, 1, RED_L)]), /combination/i],
      ['a combinationId matching no combination', orderBody([line(shirt, 1, randomUUID())]), /combination/i]
    ]
    for (const [name, body, message] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'order_creation_failed', message) })
    }
  })

  t.test('415 unsupported_media_type without application/json', async (t) => {
    const body = JSON.stringify(orderBody(good))
    await t.test('a text/plain body', async (t) => {
      await expectRefused(t, app, post(body, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
    })
    await t.test('no content-type and no body', async (t) => {
      await expectRefused(t, app, post(undefined, { 'content-type': undefined }), 415, 'unsupported_media_type')
    })
    await t.test('a form body', async (t) => {
      await expectRefused(t, app, post('customerName=Ada', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type')
    })
    await t.test('application/json with a charset is accepted', async (t) => {
      const res = await postOrder(app, key, orderBody([line(dime, 1)]), { 'content-type': 'application/json; charset=utf-8' })
      t.equal(res.statusCode, 201)
    })
  })

  t.test('validation_failed', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['more than 500 lines', orderBody(Array.from({ length: 501 }, () => line(dime, 1)))],
      ['a JSON array', [orderBody(good)]],
      ['JSON null', 'null'],
      ['a JSON string', '"an order"'],
      ['a JSON number', '42'],
      ['a note that is not a string', orderBody(good, { note: 42 })],
      ['an address that is not an object', orderBody(good, { address: 'Main Street 1' })],
      ['a combinationId that is not a GUID', orderBody([{ productId: shirt.id, combinationId: 'red-l' }])],
      ['a combinationId in urn:uuid: form', orderBody([{ productId: shirt.id, combinationId: `urn:uuid:${BLUE_S}` }])],
      ['a latitude out of range', orderBody(good, { address: { latitude: 123 } })]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'validation_failed') })
    }
  })

  t.test('invalid_json', async (t) => {
    for (const [name, raw] of [['truncated JSON', '{"customerName": "Ada", "items": ['], ['not JSON at all', 'customer=Ada'], ['an empty body', '']]) {
      await t.test(name!, async (t) => { await refused(t, raw, 'invalid_json') })
    }
  })
})

t.test('create order: quantities and phones that are accepted', async (t) => {
  t.test('an omitted quantity means 1', async (t) => {
    const before = await productStock(app, plain.id)
    const order = await created(t, await postOrder(app, key, orderBody([{ productId: plain.id }])))
    t.equal(order.productsCount, 1)
    t.equal(order.total, 10)
    t.equal(await productStock(app, plain.id), before! - 1)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.equal(full.items[0]!.quantity, 1)
  })

  t.test('the largest quantity, 100000, is accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 100000)])))
    t.equal(order.productsCount, 100000)
    t.equal(order.total, 10000)
  })

  t.test('exactly 500 lines are accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody(Array.from({ length: 500 }, () => line(dime, 1)))))
    t.equal(order.productsCount, 500)
    t.equal(order.total, 50)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.equal(full.items.length, 500)
  })

  t.test('an upper-case productId and combinationId are accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line({ id: shirt.id.toUpperCase() }, 1, BLUE_S.toUpperCase())])))
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.match(full.items[0], { productId: shirt.id, combinationId: BLUE_S })
  })

  t.test('a national number with an ISO alpha-2 address.country is stored in E.164', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { customerPhone: '(213) 373-4253', address: { country: 'US', city: 'Los Angeles' } })))
    t.equal(order.customerPhone, '+12133734253')
    const row = await orderRow(app, order.id)
    t.equal(row!.customer_phone, '+12133734253')
    t.equal(row!.address!.phone, '+12133734253', 'the delivery phone defaults to customerPhone, in E.164')
  })

  t.test('address.phone is read in address.country and stored in E.164', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { address: { country: 'gb', phone: '020 7946 0958' } })))
    t.equal(order.customerPhone, PHONE)
    t.equal((await orderRow(app, order.id))!.address!.phone, UK_PHONE)
  })

  t.test('the store default country reads national numbers', async (t) => {
    t.teardown(async () => {
      await execute(app.database.db, sql`delete from store_settings where name = 'defaultCountry'`)
      await app.storeState.refresh()
    })
    const body = orderBody([line(dime, 1)], { customerPhone: '213-373-4253' })
    await expectRefused(t, app, () => postOrder(app, key, body), 400, 'invalid_phone_number')

    await writeSetting(app.database.db, 'defaultCountry', 'US')
    await app.storeState.refresh()
    const order = await created(t, await postOrder(app, key, body))
    t.equal(order.customerPhone, '+12133734253')
    t.equal((await orderRow(app, order.id))!.customer_phone, '+12133734253')

    const uk = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { customerPhone: '020 7946 0958', address: { country: 'GB' } })))
    t.equal(uk.customerPhone, UK_PHONE, 'address.country wins over the store default')
  })
})

t.test('exact totals', async (t) => {
  t.test('0.1 × 3 is exactly 0.3', async (t) => {
    const res = await postOrder(app, key, orderBody([line(dime, 3)]))
    const order = await created(t, res)
    t.equal(order.total, 0.3)
    t.equal(order.finalTotal, 0.3)
    t.match(res.body, /"total":0\.3[,}]/)
    t.notMatch(res.body, /0\.30000000000000004/)
    const get = await getJson(app, key, `/external/v1/orders/${order.id}`)
    t.notMatch(get.body, /0000000/, 'no float noise anywhere in the order')
    t.match(get.json<Full>().items[0], { singlePrice: 0.1, totalPrice: 0.3, quantity: 3 })
  })

  t.test('19.99 × 3 is exactly 59.97', async (t) => {
    const res = await postOrder(app, key, orderBody([line(pricey, 3)]))
    const order = await created(t, res)
    t.equal(order.total, 59.97)
    t.match(res.body, /"total":59\.97[,}]/)
    t.notMatch(res.body, /59\.9700000|59\.969999/)
  })

  t.test('discounted combinations, rounded half-up', async (t) => {
    const res = await postOrder(app, key, orderBody([line(shirt, 2, RED_L), line(shirt, 1, BLUE_S), line(cap, 1, CAP_ONE)]))
    const order = await created(t, res)
    // 20 at 25% → 15 (× 2 = 30); 1.15 at 50% → 0.575 → 0.58; the cap's product discount: 12 − 2 = 10.
    t.equal(order.total, 40.58)
    t.equal(order.productsCount, 4)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.same(full.items, [
      { productId: shirt.id, combinationId: RED_L, name: 'Shirt (Red / L)', quantity: 2, singlePrice: 15, totalPrice: 30 },
      { productId: shirt.id, combinationId: BLUE_S, name: 'Shirt (Blue / S)', quantity: 1, singlePrice: 0.58, totalPrice: 0.58 },
      { productId: cap.id, combinationId: CAP_ONE, name: 'Cap (One size)', quantity: 1, singlePrice: 10, totalPrice: 10 }
    ])
  })

  t.test('a combination\'s own discount beats its product\'s; discount windows are honoured', async (t) => {
    const HOUR = 3_600_000
    const past = (ms: number) => new Date(Date.now() - ms).toISOString()
    const future = (ms: number) => new Date(Date.now() + ms).toISOString()
    const variant = randomUUID(); const a = randomUUID(); const b = randomUUID(); const own = randomUUID(); const inherited = randomUUID()
    const hat: CatalogProduct = {
      id: randomUUID(),
      name: 'Hat',
      price: 10,
      discount: { type: 'percentage', value: 50 },
      isAvailable: true,
      variants: [{ id: variant, name: 'Kind', options: [{ id: a, name: 'Own' }, { id: b, name: 'Inherited' }] }],
      combinations: [
        { id: own, optionIds: [a], price: 10, discount: { type: 'percentage', value: 10 }, quantity: null, isAvailable: true },
        { id: inherited, optionIds: [b], price: 10, quantity: null, isAvailable: true }
      ]
    }
    const ended = makeProduct({ name: 'Ended Sale', price: 8, quantity: null, discount: { type: 'amount', value: 3, startsAt: past(2 * HOUR), endsAt: past(HOUR) } })
    const upcoming = makeProduct({ name: 'Upcoming Sale', price: 8, quantity: null, discount: { type: 'amount', value: 3, startsAt: future(HOUR), endsAt: null } })
    const running = makeProduct({ name: 'Running Sale', price: 8, quantity: null, discount: { type: 'amount', value: 3, startsAt: past(HOUR), endsAt: future(HOUR) } })
    const overdone = makeProduct({ name: 'Overdone Sale', price: 2, quantity: null, discount: { type: 'amount', value: 5 } })
    await importProducts(app, [hat, ended, upcoming, running, overdone])
    const order = await created(t, await postOrder(app, key, orderBody([
      line(hat, 1, own), line(hat, 1, inherited), line(ended, 1), line(upcoming, 1), line(running, 1), line(overdone, 1)
    ])))
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.same(full.items.map((i) => [i.name, i.singlePrice]), [
      ['Hat (Own)', 9], ['Hat (Inherited)', 5], ['Ended Sale', 8], ['Upcoming Sale', 8], ['Running Sale', 5], ['Overdone Sale', 0]
    ])
    t.equal(order.total, 35)
  })

  t.test('the largest amount an order can hold, and one cent more', async (t) => {
    const dear = makeProduct({ name: 'Dear Diamond', price: 9999999999.99, quantity: null })
    const half = makeProduct({ name: 'Half Diamond', price: 5000000000, quantity: null })
    await importProducts(app, [dear, half])
    const res = await postOrder(app, key, orderBody([line(dear, 1)]))
    t.equal((await created(t, res)).total, 9999999999.99)
    t.match(res.body, /"total":9999999999\.99[,}]/)
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(dear, 2)])), 400, 'order_creation_failed')
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(half, 1), line(half, 1)])), 400, 'order_creation_failed')
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(dear, 1), line(dime, 1)])), 400, 'order_creation_failed')
  })

  t.test('productsCount is the sum of quantities, over repeated lines too', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 3), line(pricey, 2), line(dime, 4)])))
    t.equal(order.productsCount, 9)
    t.equal(order.total, 40.68)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
    t.same(full.items.map((i) => [i.productId, i.quantity, i.totalPrice]), [[dime.id, 3, 0.3], [pricey.id, 2, 39.98], [dime.id, 4, 0.4]], 'lines kept as sent, in order')
  })

  t.test('prices sent by the client are ignored', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([{ ...line(pricey, 1), singlePrice: 0.01, price: 0 }], { total: 0, finalTotal: 0 })))
    t.equal(order.total, 19.99)
    t.equal(order.finalTotal, 19.99)
  })

  t.test('finalTotal adds the delivery fee only when an address is given', async (t) => {
    t.teardown(async () => {
      await execute(app.database.db, sql`delete from store_settings where name = 'deliveryFee'`)
      await app.storeState.refresh()
    })
    const beforeFee = await created(t, await postOrder(app, key, orderBody([line(dime, 3)], { address: { city: 'Paris' } })))
    t.equal(beforeFee.finalTotal, 0.3, 'the default fee is 0')

    await writeSetting(app.database.db, 'deliveryFee', '4.99')
    await app.storeState.refresh()
    const pickup = await created(t, await postOrder(app, key, orderBody([line(dime, 3)])))
    t.equal(pickup.total, 0.3)
    t.equal(pickup.finalTotal, 0.3, 'no address: no fee')
    const delivered = await created(t, await postOrder(app, key, orderBody([line(dime, 3)], { address: { lineOne: '1 Main St', city: 'Paris' } })))
    t.equal(delivered.total, 0.3)
    t.equal(delivered.finalTotal, 5.29)
    const res = await postOrder(app, key, orderBody([line(pricey, 3)], { address: { city: 'Paris' } }))
    const bigger = await created(t, res)
    t.equal(bigger.finalTotal, 64.96)
    t.match(res.body, /"finalTotal":64\.96[,}]/)
    const fetched = (await getJson(app, key, `/external/v1/orders/${delivered.id}`)).json<Full>()
    t.match(fetched, { total: 0.3, finalTotal: 5.29 })
    const nullAddress = await created(t, await postOrder(app, key, orderBody([line(dime, 3)], { address: null, note: null })))
    t.equal(nullAddress.finalTotal, 0.3, 'address: null is no address: no fee')
    t.equal(nullAddress.note, null)
    const nullFields = await created(t, await postOrder(app, key, orderBody([line(dime, 3)], { address: { lineOne: '1 Main St', lineTwo: null, phone: null, country: null } })))
    t.equal(nullFields.finalTotal, 5.29, 'null address fields count as absent')
    t.equal((await orderRow(app, nullFields.id))!.address!.phone, PHONE, 'address.phone: null falls back to customerPhone')
  })
})

t.test('frozen prices: a later catalogue change does not touch an order', async (t) => {
  const product = makeProduct({ name: 'Frozen Kettle', price: 19.99, quantity: 50 })
  await importProducts(app, [product])
  const order = await created(t, await postOrder(app, key, orderBody([line(product, 2)])))
  t.match(order, { total: 39.98, finalTotal: 39.98 })
  const before = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()

  await importProducts(app, [{ ...product, name: 'Renamed Kettle', price: 25, discount: { type: 'percentage', value: 10 } }])
  const now = await getJson(app, key, `/external/v1/products/${product.id}`)
  t.match(now.json(), { price: 25, sellPrice: 22.5 }, 'the catalogue did change')

  const after = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<Full>()
  t.same(after, before)
  t.same(after.items, [{ productId: product.id, combinationId: null, name: 'Frozen Kettle', quantity: 2, singlePrice: 19.99, totalPrice: 39.98 }])
  t.match(after, { total: 39.98, finalTotal: 39.98 })
})

t.test('all or nothing', async (t) => {
  const first = makeProduct({ name: 'First Bowl', price: 3, quantity: 10 })
  const second = makeProduct({ name: 'Second Bowl', price: 4, quantity: 1 })
  await importProducts(app, [first, second])

  t.test('a second line without enough stock takes nothing from the first', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line(second, 5)])), 400, 'order_creation_failed', /stock/i)
    t.equal(await productStock(app, first.id), 10)
    t.equal(await productStock(app, second.id), 1)
  })

  t.test('a later unknown product takes nothing from the first', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line({ id: randomUUID() }, 1)])), 400, 'invalid_item')
    t.equal(await productStock(app, first.id), 10)
  })

  t.test('a later unavailable combination takes nothing from earlier lines', async (t) => {
    const redL = await combinationStock(app, RED_L)
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line(shirt, 1, RED_L), line(shirt, 1, RED_S)])), 400, 'order_creation_failed')
    t.equal(await productStock(app, first.id), 10)
    t.equal(await combinationStock(app, RED_L), redL)
  })

  t.test('then a good order takes exactly its stock', async (t) => {
    await created(t, await postOrder(app, key, orderBody([line(first, 2), line(second, 1)])))
    t.equal(await productStock(app, first.id), 8)
    t.equal(await productStock(app, second.id), 0)
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(second, 1)])), 400, 'order_creation_failed', /stock/i)
  })

  t.test('a combination\'s stock is taken from the combination', async (t) => {
    const before = await combinationStock(app, BLUE_L)
    await created(t, await postOrder(app, key, orderBody([line(shirt, 1, BLUE_L)])))
    t.equal(await combinationStock(app, BLUE_L), before! - 1)
    t.equal(await productStock(app, shirt.id), null, 'the product row holds no stock of its own')
  })
})

t.test('the 201 answer', async (t) => {
  const product = makeProduct({ name: 'Fresh Teapot', price: 7.5, quantity: 10 })
  await importProducts(app, [product])

  t.test('Location, body, headers, stock', async (t) => {
    const before = await snapshot(app)
    const res = await postOrder(app, key, orderBody([line(product, 2)], { note: 'Ring twice' }))
    const order = await created(t, res)
    t.match(res.headers.location, /^https?:\/\/[^/]+\/external\/v1\/orders\/[0-9a-f-]{36}$/, 'an absolute URL')
    t.ok(String(res.headers.location).endsWith(`/external/v1/orders/${order.id}`))
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.headers['idempotent-replayed'], undefined)
    t.ok(res.headers['request-id'])
    t.same(Object.keys(order).sort(), SUMMARY_KEYS, 'every field, and no items')
    t.match(order.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    t.equal(order.status, 'pending')
    t.match(order.orderNumber, /^\d+$/)
    t.type(order.orderNumber, 'string')
    t.match(order.date, ISO_WITH_OFFSET)
    t.ok(Math.abs(Date.parse(order.date) - Date.now()) < 60_000, 'the date is now')
    t.match(order, { total: 15, finalTotal: 15, productsCount: 2, customerName: 'Ada Lovelace', customerPhone: PHONE, note: 'Ring twice' })
    t.equal(await productStock(app, product.id), 8)
    const after = await snapshot(app)
    t.equal(after.orders, before.orders + 1)

    const fetched = await app.inject({ url: res.headers.location!.replace(/^https?:\/\/[^/]+/, ''), headers: authHeaders(key) })
    t.equal(fetched.statusCode, 200, 'the Location answers')
    t.equal(fetched.json<Full>().id, order.id)
  })

  t.test('note is null when none is sent', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(product, 1)])))
    t.equal(order.note, null)
  })

  t.test('order numbers increase', async (t) => {
    const a = await created(t, await postOrder(app, key, orderBody([line(dime, 1)])))
    const b = await created(t, await postOrder(app, key, orderBody([line(dime, 1)])))
    t.ok(BigInt(b.orderNumber) > BigInt(a.orderNumber))
  })

  t.test('Location uses PUBLIC_BASE_URL when set', async (t) => {
    const publicApp = await buildTestApp(t, { database: app.database, env: { ...ENV, PUBLIC_BASE_URL: 'https://api.example.com' } })
    const res = await postOrder(publicApp, key, orderBody([line(dime, 1)]), { host: 'internal.local:8080' })
    const order = await created(t, res)
    t.equal(res.headers.location, `https://api.example.com/external/v1/orders/${order.id}`)
  })
})

t.test('list orders', async (t) => {
  const product = makeProduct({ name: 'List Spoon', price: 1, quantity: null })
  await importProducts(app, [product])
  const { key: keyA } = await makeKey(app, [...SCOPES], { name: 'A' })
  const { key: keyB } = await makeKey(app, [...SCOPES], { name: 'B' })
  const mine: Summary[] = []
  for (let i = 1; i <= 27; i++) {
    const extra = i === 7 ? { customerName: 'Grace Hopper' } : i === 11 ? { customerPhone: UK_PHONE, customerName: 'Customer Eleven' } : { customerName: `Customer ${i}` }
    mine.push(await created(t, await postOrder(app, keyA, orderBody([line(product, 1)], extra))))
  }
  const theirs = [
    await created(t, await postOrder(app, keyB, orderBody([line(product, 1)], { customerName: 'Grace Hopper', customerPhone: UK_PHONE }))),
    await created(t, await postOrder(app, keyB, orderBody([line(product, 1)], { customerName: 'Customer 1' })))
  ]
  const expected = [...mine].sort(newestFirst)
  const list = async (qs: string, k = keyA) => {
    const res = await getJson(app, k, `/external/v1/orders${qs}`)
    t.equal(res.statusCode, 200, `GET /orders${qs}`)
    return res.json<OrderPage>()
  }

  t.test('page 1: 25 of the caller\'s orders, newest first, without items', async (t) => {
    const res = await getJson(app, keyA, '/external/v1/orders')
    t.equal(res.headers['cache-control'], 'no-store')
    const body = res.json<OrderPage>()
    t.same(Object.keys(body).sort(), ['items', 'page', 'pageSize', 'total'])
    t.match(body, { page: 1, pageSize: 25, total: 27 })
    t.equal(body.items.length, 25)
    t.same(body.items.map((o) => o.id), expected.slice(0, 25).map((o) => o.id))
    for (const item of body.items) t.same(Object.keys(item).sort(), SUMMARY_KEYS, 'no items key')
    t.same(body.items[0], expected[0], 'the list shows what create answered')
  })

  t.test('page 2: the remaining 2', async (t) => {
    const body = await list('?page=2')
    t.match(body, { page: 2, pageSize: 25, total: 27 })
    t.same(body.items.map((o) => o.id), expected.slice(25).map((o) => o.id))
  })

  t.test('page 0 is page 1, a page past the end is empty', async (t) => {
    t.same((await list('?page=0')).items.map((o) => o.id), expected.slice(0, 25).map((o) => o.id))
    t.same(await list('?page=3'), { items: [], page: 3, pageSize: 25, total: 27 })
    checkError(t, await getJson(app, keyA, '/external/v1/orders?page=abc'), 400, 'validation_failed')
  })

  t.test('another key sees only its own orders', async (t) => {
    const body = await list('', keyB)
    t.equal(body.total, 2)
    t.same(body.items.map((o) => o.id), [...theirs].sort(newestFirst).map((o) => o.id))
    const mineIds = new Set(mine.map((o) => o.id))
    t.notOk(body.items.some((o) => mineIds.has(o.id)))
  })

  t.test('newest first, strictly by creation when dates differ', async (t) => {
    const { key: keyC } = await makeKey(app, [...SCOPES], { name: 'C' })
    const made: Summary[] = []
    for (let i = 0; i < 3; i++) {
      made.push(await created(t, await postOrder(app, keyC, orderBody([line(product, 1)]))))
      await sleep(15)
    }
    t.same((await list('', keyC)).items.map((o) => o.id), made.reverse().map((o) => o.id))
  })

  t.test('query: the exact order number', async (t) => {
    const target = mine[4]!
    const body = await list(`?query=${target.orderNumber}`)
    t.same(body.items.map((o) => o.id), [target.id])
    t.equal(body.total, 1)
    t.equal((await list(`?query=${theirs[0]!.orderNumber}`)).total, 0, 'not another key\'s order number')
  })

  t.test('query: an order-number prefix', async (t) => {
    // The key's 27 consecutive numbers fill at least one whole decade: use its prefix.
    const prefixes = mine.map((o) => o.orderNumber.slice(0, -1))
    const prefix = prefixes.find((p) => prefixes.filter((q) => q === p).length === 10)!
    const want = expected.filter((o) => o.orderNumber.startsWith(prefix))
    t.equal(want.length, 10, 'the prefix matches ten orders')
    const body = await list(`?query=${prefix}`)
    t.same(body.items.map((o) => o.id), want.slice(0, 25).map((o) => o.id))
    t.equal(body.total, want.length)
  })

  t.test('query: a case-insensitive part of the customer name', async (t) => {
    const grace = mine[6]!
    for (const q of ['gRaCe%20hOP', 'HOPPER', 'ace h']) {
      const body = await list(`?query=${q}`)
      t.same(body.items.map((o) => o.id), [grace.id], q)
    }
    const customers = await list('?query=customer')
    t.equal(customers.total, 26, 'every other order of the key')
  })

  t.test('query: a part of the phone', async (t) => {
    const eleven = mine[10]!
    t.same((await list('?query=79460')).items.map((o) => o.id), [eleven.id])
    t.same((await list(`?query=${encodeURIComponent(UK_PHONE)}`)).items.map((o) => o.id), [eleven.id])
  })

  t.test('query: nothing matching, and LIKE wildcards are literal', async (t) => {
    t.same(await list('?query=nobody-here'), { items: [], page: 1, pageSize: 25, total: 0 })
    t.equal((await list('?query=%25')).total, 0)
    t.equal((await list('?query=_')).total, 0)
  })
})

t.test('get one order', async (t) => {
  const { key: keyA } = await makeKey(app, [...SCOPES], { name: 'A2' })
  const { key: keyB } = await makeKey(app, [...SCOPES], { name: 'B2' })
  const order = await created(t, await postOrder(app, keyA, orderBody([line(shirt, 1, RED_L), line(dime, 2)], { note: 'gift' })))
  const expectedItems: Item[] = [
    { productId: shirt.id, combinationId: RED_L, name: 'Shirt (Red / L)', quantity: 1, singlePrice: 15, totalPrice: 15 },
    { productId: dime.id, combinationId: null, name: 'Dime Sticker', quantity: 2, singlePrice: 0.1, totalPrice: 0.2 }
  ]

  t.test('by GUID, with its items', async (t) => {
    const res = await getJson(app, keyA, `/external/v1/orders/${order.id}`)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cache-control'], 'no-store')
    const body = res.json<Full>()
    t.same(Object.keys(body).sort(), [...SUMMARY_KEYS, 'items'].sort())
    const { items, ...summary } = body
    t.same(summary, order, 'the same order create answered')
    t.same(items, expectedItems)
    for (const item of items) t.same(Object.keys(item).sort(), ITEM_KEYS)
  })

  t.test('by order number, and by upper-case GUID', async (t) => {
    const byId = (await getJson(app, keyA, `/external/v1/orders/${order.id}`)).json()
    const byNumber = await getJson(app, keyA, `/external/v1/orders/${order.orderNumber}`)
    t.equal(byNumber.statusCode, 200)
    t.same(byNumber.json(), byId)
    const upper = await getJson(app, keyA, `/external/v1/orders/${order.id.toUpperCase()}`)
    t.equal(upper.statusCode, 200)
    t.same(upper.json(), byId)
  })

  t.test('another key\'s order answers exactly like a missing one', async (t) => {
    const missing = await getJson(app, keyB, `/external/v1/orders/${randomUUID()}`)
    checkError(t, missing, 404, 'order_not_found')
    const reference = missing.json<Record<string, unknown>>()
    const probes = [
      ['another key\'s order by id', order.id],
      ['another key\'s order by number', order.orderNumber],
      ['a missing number', '999999999'],
      ['garbage', 'not-an-order'],
      ['a number with letters', `${order.orderNumber}abc`],
      ['an 18-digit number', '999999999999999999'],
      ['a 25-digit number', '1234567890123456789012345'],
      ['a negative number', '-1'],
      ['the caller\'s own number with a leading zero', 'LEADING_ZERO']
    ]
    for (const [name, value] of probes) {
      // Order numbers are matched as written: 0100001 is not order 100001.
      const [caller, probe] = value === 'LEADING_ZERO' ? [keyA, `0${order.orderNumber}`] : [keyB, value!]
      const res = await getJson(app, caller, `/external/v1/orders/${encodeURIComponent(probe)}`)
      checkError(t, res, 404, 'order_not_found')
      const { requestId: _r, ...rest } = res.json<Record<string, unknown>>()
      const { requestId: _m, ...restMissing } = reference
      t.same(rest, restMissing, `${name}: the same body as a missing order`)
      t.same(Object.keys(res.headers).filter((h) => !h.startsWith('ratelimit')).sort(),
        Object.keys(missing.headers).filter((h) => !h.startsWith('ratelimit')).sort(), `${name}: the same headers`)
    }
  })
})

t.test('scopes: 403 insufficient_scope for each order endpoint', async (t) => {
  const without = (scope: Scope) => makeKey(app, SCOPES.filter((s) => s !== scope), { name: `without ${scope}` })

  t.test('create needs orders:create', async (t) => {
    const { key: k } = await without('orders:create')
    await expectRefused(t, app, () => postOrder(app, k, orderBody([line(dime, 1)])), 403, 'insufficient_scope', /orders:create/)
  })

  t.test('list needs orders:list', async (t) => {
    const { key: k } = await without('orders:list')
    checkError(t, await getJson(app, k, '/external/v1/orders'), 403, 'insufficient_scope', /orders:list/)
  })

  t.test('get needs orders:find', async (t) => {
    const { key: k } = await without('orders:find')
    const order = await created(t, await postOrder(app, k, orderBody([line(dime, 1)])))
    checkError(t, await getJson(app, k, `/external/v1/orders/${order.id}`), 403, 'insufficient_scope', /orders:find/)
    checkError(t, await getJson(app, k, `/external/v1/orders/${order.orderNumber}`), 403, 'insufficient_scope', /orders:find/)
  })

  t.test('a key with only orders:create can create', async (t) => {
    const { key: k } = await makeKey(app, ['orders:create'])
    await created(t, await postOrder(app, k, orderBody([line(dime, 1)])))
  })
})

t.test('maintenance', async (t) => {
  const product = makeProduct({ name: 'Maintenance Fork', price: 2, quantity: 5 })
  await importProducts(app, [product])
  const existing = await created(t, await postOrder(app, key, orderBody([line(product, 1)])))
  const setMaintenance = async (on: boolean) => {
    await writeSetting(app.database.db, 'maintenance', on)
    await app.storeState.refresh()
  }
  t.teardown(() => setMaintenance(false))
  await setMaintenance(true)

  t.test('create answers 503 store_under_maintenance with Retry-After and creates nothing', async (t) => {
    const res = await expectRefused(t, app, () => postOrder(app, key, orderBody([line(product, 1)])), 503, 'store_under_maintenance')
    t.match(res.headers['retry-after'], /^\d+$/)
    t.ok(Number(res.headers['retry-after']) > 0)
    const withKey = await expectRefused(t, app, () => postOrder(app, key, orderBody([line(product, 1)]), { 'idempotency-key': 'during-maintenance' }), 503, 'store_under_maintenance')
    t.ok(withKey.headers['retry-after'])
  })

  t.test('reads keep working', async (t) => {
    const list = await getJson(app, key, '/external/v1/orders')
    t.equal(list.statusCode, 200)
    t.ok(list.json<OrderPage>().total > 0)
    t.equal((await getJson(app, key, `/external/v1/orders/${existing.id}`)).statusCode, 200)
    t.equal((await getJson(app, key, '/external/v1/products')).statusCode, 200)
    t.equal((await getJson(app, key, `/external/v1/products/${product.id}`)).statusCode, 200)
  })

  t.test('off again: create works', async (t) => {
    await setMaintenance(false)
    await created(t, await postOrder(app, key, orderBody([line(product, 1)]), { 'idempotency-key': 'during-maintenance' }))
    t.equal(await productStock(app, product.id), 3)
  })
})

t.test('idempotency', async (t) => {
  const product = makeProduct({ name: 'Idempotent Jug', price: 4.2, quantity: 10 })
  await importProducts(app, [product])
  const body = orderBody([line(product, 1)], { note: 'idem' })
  const countOrders = async () => (await snapshot(app)).orders

  const first = await postOrder(app, key, body, { 'idempotency-key': 'order-1' })
  const firstOrder = await created(t, first)
  t.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay')
  t.equal(await productStock(app, product.id), 9)

  t.test('the same key and body replay the first answer', async (t) => {
    const orders = await countOrders()
    const again = await postOrder(app, key, body, { 'idempotency-key': 'order-1' })
    t.equal(again.statusCode, 201)
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.headers.location, first.headers.location)
    t.same(again.json(), firstOrder)
    t.equal(await countOrders(), orders, 'no new order')
    t.equal(await productStock(app, product.id), 9, 'stock taken once')
  })

  t.test('key order and whitespace of the raw JSON do not matter', async (t) => {
    const raw = `{
      "note" : "idem",
      "items": [ { "quantity" : 1 , "productId": "${product.id}" } ],
      "customerPhone":"${PHONE}",   "customerName" : "Ada Lovelace"
    }`
    t.same(JSON.parse(raw), body, 'the same JSON value')
    const orders = await countOrders()
    const again = await postOrder(app, key, raw, { 'idempotency-key': 'order-1' })
    t.equal(again.statusCode, 201)
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.json<Summary>().id, firstOrder.id)
    t.equal(await countOrders(), orders)
    t.equal(await productStock(app, product.id), 9)
  })

  t.test('the same key with another body: 422 idempotency_key_reused', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, { ...body, items: [line(product, 2)] }, { 'idempotency-key': 'order-1' }), 422, 'idempotency_key_reused')
    await expectRefused(t, app, () => postOrder(app, key, { ...body, note: 'other' }, { 'idempotency-key': 'order-1' }), 422, 'idempotency_key_reused')
    await expectRefused(t, app, () => postOrder(app, key, { ...body, note: undefined }, { 'idempotency-key': 'order-1' }), 422, 'idempotency_key_reused')
  })

  t.test('the same Idempotency-Key from another API key is independent', async (t) => {
    const res = await postOrder(app, otherKey, body, { 'idempotency-key': 'order-1' })
    const order = await created(t, res)
    t.equal(res.headers['idempotent-replayed'], undefined)
    t.not(order.id, firstOrder.id)
    t.equal(await productStock(app, product.id), 8)
    const own = (await getJson(app, otherKey, `/external/v1/orders/${order.id}`))
    t.equal(own.statusCode, 200)
    t.equal((await getJson(app, otherKey, `/external/v1/orders/${firstOrder.id}`)).statusCode, 404)
  })

  t.test('an expired record no longer replays', async (t) => {
    await execute(app.database.db, sql`update idempotency_keys set expires_at = now() - interval '1 minute' where api_key_id = ${keyId} and key = 'order-1'`)
    const res = await postOrder(app, key, body, { 'idempotency-key': 'order-1' })
    const order = await created(t, res)
    t.equal(res.headers['idempotent-replayed'], undefined)
    t.not(order.id, firstOrder.id)
    t.equal(await productStock(app, product.id), 7)
    const replay = await postOrder(app, key, body, { 'idempotency-key': 'order-1' })
    t.equal(replay.headers['idempotent-replayed'], 'true')
    t.equal(replay.json<Summary>().id, order.id, 'the new answer is what replays now')
  })

  t.test('an expired record does not refuse another body', async (t) => {
    await created(t, await postOrder(app, key, body, { 'idempotency-key': 'order-2' }))
    await execute(app.database.db, sql`update idempotency_keys set expires_at = now() - interval '1 minute' where api_key_id = ${keyId} and key = 'order-2'`)
    const res = await postOrder(app, key, { ...body, note: 'changed' }, { 'idempotency-key': 'order-2' })
    t.equal((await created(t, res)).note, 'changed')
  })

  t.test('deleteExpiredIdempotencyKeys removes expired records only', async (t) => {
    await created(t, await postOrder(app, key, body, { 'idempotency-key': 'to-expire' }))
    await execute(app.database.db, sql`update idempotency_keys set expires_at = now() - interval '1 second' where api_key_id = ${keyId} and key = 'to-expire'`)
    const keys = async () => (await execute<{ key: string }>(app.database.db, sql`select key from idempotency_keys where api_key_id = ${keyId} order by key`)).map((r) => r.key)
    t.ok((await keys()).includes('to-expire'))
    const removed = await deleteExpiredIdempotencyKeys(app.database.db)
    t.equal(removed, 1)
    const left = await keys()
    t.notOk(left.includes('to-expire'), 'the expired record is gone')
    t.ok(left.includes('order-1') && left.includes('order-2'), 'live records stay')
    t.equal(await deleteExpiredIdempotencyKeys(app.database.db), 0)
  })

  t.test('a malformed Idempotency-Key is a validation error', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, body, { 'idempotency-key': 'x'.repeat(256) }), 400, 'validation_failed')
    await expectRefused(t, app, () => postOrder(app, key, body, { 'idempotency-key': 'has space' }), 400, 'validation_failed')
  })
})
