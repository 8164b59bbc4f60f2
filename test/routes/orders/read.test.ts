// List and get orders: pages, order, search, the full order with its items, and another
// key's orders answering exactly like missing ones.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { SCOPES } from '../../../lib/api-key-secret.ts'
import {
  created, expectError, getJson, importProducts, line, makeKey, makeProduct, ORDER_SUMMARY_KEYS, orderBody, orderStore, postOrder, sleep,
  UK_PHONE, type FullOrder, type OrderItem, type OrderPage, type OrderSummary
} from '../../helper.ts'

const ITEM_KEYS = ['combinationId', 'name', 'productId', 'quantity', 'singlePrice', 'totalPrice']

/** Newest first, then id. */
const newestFirst = (a: OrderSummary, b: OrderSummary) => (a.date === b.date ? (a.id < b.id ? 1 : -1) : (a.date < b.date ? 1 : -1))

const { app, products: { dime, shirt }, combinations: { RED_L } } = await orderStore(t)

t.test('list orders', async (t) => {
  const product = makeProduct({ name: 'List Spoon', price: 1, quantity: null })
  await importProducts(app, [product])
  const { key: keyA } = await makeKey(app, [...SCOPES], { name: 'A' })
  const { key: keyB } = await makeKey(app, [...SCOPES], { name: 'B' })
  const mine: OrderSummary[] = []
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
    t.equal(res.headers['cache-control'], 'private, no-cache')
    const body = res.json<OrderPage>()
    t.same(Object.keys(body).sort(), ['items', 'nextCursor', 'page', 'pageSize', 'total'])
    t.match(body, { page: 1, pageSize: 25, total: 27 })
    t.equal(body.items.length, 25)
    t.same(body.items.map((o) => o.id), expected.slice(0, 25).map((o) => o.id))
    for (const item of body.items) t.same(Object.keys(item).sort(), ORDER_SUMMARY_KEYS, 'no items key')
    t.same(body.items[0], expected[0], 'the list shows what create answered')
  })

  t.test('page 2: the remaining 2', async (t) => {
    const body = await list('?page=2')
    t.match(body, { page: 2, pageSize: 25, total: 27 })
    t.same(body.items.map((o) => o.id), expected.slice(25).map((o) => o.id))
  })

  t.test('page 0 is page 1, a page past the end is empty', async (t) => {
    t.same((await list('?page=0')).items.map((o) => o.id), expected.slice(0, 25).map((o) => o.id))
    t.same(await list('?page=3'), { items: [], page: 3, pageSize: 25, total: 27, nextCursor: null })
    expectError(t, await getJson(app, keyA, '/external/v1/orders?page=abc'), 400, 'validation_failed', { details: true })
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
    const made: OrderSummary[] = []
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
    t.same(await list('?query=nobody-here'), { items: [], page: 1, pageSize: 25, total: 0, nextCursor: null })
    t.equal((await list('?query=%25')).total, 0)
    t.equal((await list('?query=_')).total, 0)
  })
})

t.test('get one order', async (t) => {
  const { key: keyA } = await makeKey(app, [...SCOPES], { name: 'A2' })
  const { key: keyB } = await makeKey(app, [...SCOPES], { name: 'B2' })
  const order = await created(t, await postOrder(app, keyA, orderBody([line(shirt, 1, RED_L), line(dime, 2)], { note: 'gift' })))
  const expectedItems: OrderItem[] = [
    { productId: shirt.id, combinationId: RED_L, name: 'Shirt (Red / L)', quantity: 1, singlePrice: 15, totalPrice: 15 },
    { productId: dime.id, combinationId: null, name: 'Dime Sticker', quantity: 2, singlePrice: 0.1, totalPrice: 0.2 }
  ]

  t.test('by GUID, with its items', async (t) => {
    const res = await getJson(app, keyA, `/external/v1/orders/${order.id}`)
    t.equal(res.statusCode, 200)
    t.equal(res.headers['cache-control'], 'private, no-cache')
    const body = res.json<FullOrder>()
    t.same(Object.keys(body).sort(), [...ORDER_SUMMARY_KEYS, 'items'].sort())
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
    expectError(t, missing, 404, 'order_not_found')
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
      expectError(t, res, 404, 'order_not_found')
      const { requestId: _r, ...rest } = res.json<Record<string, unknown>>()
      const { requestId: _m, ...restMissing } = reference
      t.same(rest, restMissing, `${name}: the same body as a missing order`)
      t.same(Object.keys(res.headers).filter((h) => !h.startsWith('ratelimit')).sort(),
        Object.keys(missing.headers).filter((h) => !h.startsWith('ratelimit')).sort(), `${name}: the same headers`)
    }
  })
})
