// Create order, the money: prices from the catalogue (discounts, windows, rounding), exact
// decimal totals, the largest amount, the delivery fee, and prices frozen once ordered.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../../db/client.ts'
import { writeSetting } from '../../../db/settings.ts'
import type { CatalogProduct } from '../../../schemas/catalog-file.ts'
import {
  created, expectRefused, getJson, importProducts, line, makeProduct, orderBody, orderRow, orderStore, PHONE, pollState, postOrder, type FullOrder
} from '../../helper.ts'

const { app, key, products: { dime, pricey, shirt, cap }, combinations: { RED_L, BLUE_S, CAP_ONE } } = await orderStore(t)

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
    t.match(get.json<FullOrder>().items[0], { singlePrice: 0.1, totalPrice: 0.3, quantity: 3 })
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
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
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
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
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
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
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
      await pollState(app)
    })
    const beforeFee = await created(t, await postOrder(app, key, orderBody([line(dime, 3)], { address: { city: 'Paris' } })))
    t.equal(beforeFee.finalTotal, 0.3, 'the default fee is 0')

    await writeSetting(app.database.db, 'deliveryFee', '4.99')
    await pollState(app)
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
    const fetched = (await getJson(app, key, `/external/v1/orders/${delivered.id}`)).json<FullOrder>()
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
  const before = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()

  await importProducts(app, [{ ...product, name: 'Renamed Kettle', price: 25, discount: { type: 'percentage', value: 10 } }])
  const now = await getJson(app, key, `/external/v1/products/${product.id}`)
  t.match(now.json(), { price: 25, sellPrice: 22.5 }, 'the catalogue did change')

  const after = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
  t.same(after, before)
  t.same(after.items, [{ productId: product.id, combinationId: null, name: 'Frozen Kettle', quantity: 2, singlePrice: 19.99, totalPrice: 39.98 }])
  t.match(after, { total: 39.98, finalTotal: 39.98 })
})
