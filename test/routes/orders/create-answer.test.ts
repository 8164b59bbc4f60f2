// Create order, the 201 answer: Location, headers, every field, and order numbers.
import t from 'tap'
import {
  authHeaders, buildTestApp, created, importProducts, line, makeProduct, ORDER_SUMMARY_KEYS, orderBody, orderSnapshot, orderStore, PHONE,
  postOrder, productStock, UNLIMITED, type FullOrder
} from '../../helper.ts'

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

const { app, key, products: { dime } } = await orderStore(t)

t.test('the 201 answer', async (t) => {
  const product = makeProduct({ name: 'Fresh Teapot', price: 7.5, quantity: 10 })
  await importProducts(app, [product])

  t.test('Location, body, headers, stock', async (t) => {
    const before = await orderSnapshot(app)
    const res = await postOrder(app, key, orderBody([line(product, 2)], { note: 'Ring twice' }))
    const order = await created(t, res)
    t.match(res.headers.location, /^https?:\/\/[^/]+\/external\/v1\/orders\/[0-9a-f-]{36}$/, 'an absolute URL')
    t.ok(String(res.headers.location).endsWith(`/external/v1/orders/${order.id}`))
    t.equal(res.headers['cache-control'], 'no-store')
    t.equal(res.headers['idempotent-replayed'], undefined)
    t.ok(res.headers['request-id'])
    t.same(Object.keys(order).sort(), ORDER_SUMMARY_KEYS, 'every field, and no items')
    t.match(order.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    t.equal(order.status, 'pending')
    t.match(order.orderNumber, /^\d+$/)
    t.type(order.orderNumber, 'string')
    t.match(order.date, ISO_WITH_OFFSET)
    t.ok(Math.abs(Date.parse(order.date) - Date.now()) < 60_000, 'the date is now')
    t.match(order, { total: 15, finalTotal: 15, productsCount: 2, customerName: 'Ada Lovelace', customerPhone: PHONE, note: 'Ring twice' })
    t.equal(await productStock(app, product.id), 8)
    const after = await orderSnapshot(app)
    t.equal(after.orders, before.orders + 1)

    const fetched = await app.inject({ url: res.headers.location!.replace(/^https?:\/\/[^/]+/, ''), headers: authHeaders(key) })
    t.equal(fetched.statusCode, 200, 'the Location answers')
    t.equal(fetched.json<FullOrder>().id, order.id)
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
    const publicApp = await buildTestApp(t, { database: app.database, env: { ...UNLIMITED, PUBLIC_BASE_URL: 'https://api.example.com' } })
    const res = await postOrder(publicApp, key, orderBody([line(dime, 1)]), { host: 'internal.local:8080' })
    const order = await created(t, res)
    t.equal(res.headers.location, `https://api.example.com/external/v1/orders/${order.id}`)
  })
})
