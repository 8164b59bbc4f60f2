// An order that names a reservation: it takes exactly the held units, once.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { combinationStock, getJson, importProducts, makeProduct, orderBody, postOrder, productStock } from '../helper.ts'
import { expectCode, hold, product, release, shirt, store, type Reservation } from '../reservations.ts'

t.test('an order with the reservation takes exactly the held units, lines in any order, split or merged', async (t) => {
  const { app, key, other } = await store(t)
  const mug = makeProduct({ name: 'Held Mug', price: 8, quantity: 5 })
  const napkin = makeProduct({ name: 'Held Napkin', price: 1, quantity: null })
  const tee = shirt()
  const [red, blue] = tee.combinations!
  await importProducts(app, [mug, napkin, tee])

  const held = (await hold(app, key, {
    items: [{ productId: mug.id, quantity: 3 }, { productId: tee.id, combinationId: red!.id, quantity: 3 }, { productId: napkin.id, quantity: 4 }, { productId: tee.id, combinationId: blue!.id }],
    ttlSeconds: 60
  })).json<Reservation>()
  t.equal(Date.parse(held.expiresAt) - Date.parse(held.createdAt), 60_000)
  t.equal(await productStock(app, mug.id), 2)
  t.equal(await combinationStock(app, red!.id), 0)
  t.equal(await combinationStock(app, blue!.id), 9)
  t.match(await product(app, other, tee.id), { quantity: 9, combinations: [{ quantity: 0, isAvailable: false }, { quantity: 9, isAvailable: true }] })

  const mismatch = [
    [{ productId: mug.id, quantity: 3 }],
    [{ productId: mug.id, quantity: 2 }, { productId: tee.id, combinationId: red!.id, quantity: 3 }, { productId: napkin.id, quantity: 4 }, { productId: tee.id, combinationId: blue!.id }],
    [{ productId: mug.id, quantity: 3 }, { productId: tee.id, combinationId: red!.id, quantity: 3 }, { productId: napkin.id, quantity: 4 }, { productId: tee.id, combinationId: blue!.id }, { productId: napkin.id }]
  ]
  for (const items of mismatch) expectCode(t, await postOrder(app, key, orderBody(items, { reservationId: held.id })), 400, 'reservation_mismatch')
  expectCode(t, await postOrder(app, other, orderBody([{ productId: mug.id, quantity: 3 }], { reservationId: held.id })), 404, 'reservation_not_found')
  expectCode(t, await postOrder(app, key, orderBody([{ productId: mug.id }], { reservationId: 'nope' })), 400, 'validation_failed')

  // Reordered, split and merged: the same totals.
  const items = [
    { productId: napkin.id, quantity: 1 }, { productId: tee.id, combinationId: blue!.id }, { productId: mug.id, quantity: 1 },
    { productId: tee.id, combinationId: red!.id, quantity: 3 }, { productId: napkin.id, quantity: 3 }, { productId: mug.id, quantity: 2 }
  ]
  const body = orderBody(items, { reservationId: held.id.toUpperCase() })
  const res = await postOrder(app, key, body, { 'idempotency-key': 'consume-1' })
  t.equal(res.statusCode, 201, res.body)
  const order = res.json<{ id: string, total: number }>()
  t.equal(order.total, 8 * 3 + 20 * 3 + 25 + 1 * 4, 'priced at order time')
  t.equal(await productStock(app, mug.id), 2, 'no second decrement')
  t.equal(await combinationStock(app, red!.id), 0)
  t.equal(await combinationStock(app, blue!.id), 9)
  t.match((await getJson(app, key, `/external/v1/reservations/${held.id}`)).json(), { status: 'consumed', orderId: order.id })

  const replay = await postOrder(app, key, body, { 'idempotency-key': 'consume-1' })
  t.equal(replay.statusCode, 201)
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal(replay.json<{ id: string }>().id, order.id, 'the replay answers the same order')
  t.equal(await productStock(app, mug.id), 2, 'and consumes nothing more')
  const again = await postOrder(app, key, body)
  expectCode(t, again, 409, 'reservation_not_active', { message: /consumed/ })
  expectCode(t, await release(app, key, held.id), 409, 'reservation_not_active')
  const [count] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from orders`)
  t.equal(count!.n, 1, 'one order')
})
