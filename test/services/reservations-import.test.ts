// A catalogue import while units are held: the file's quantity is the stock, the active holds
// are taken from it again, and what shows is never negative.

import t from 'tap'
import { importProducts, makeProduct, orderBody, postOrder, productStock } from '../helper.ts'
import { expectCode, hold, product, release, store, type Reservation } from '../reservations.ts'

t.test('a catalogue import while units are held: the file is the stock, the holds are taken from it', async (t) => {
  const { app, key, other } = await store(t)
  const jug = makeProduct({ name: 'Imported Jug', quantity: 10 })
  await importProducts(app, [jug])
  const older = (await hold(app, key, { items: [{ productId: jug.id, quantity: 4 }] })).json<Reservation>()
  const newer = (await hold(app, key, { items: [{ productId: jug.id, quantity: 3 }] })).json<Reservation>()
  t.equal(await productStock(app, jug.id), 3)

  await importProducts(app, [{ ...jug, quantity: 20 }])
  t.match(await product(app, other, jug.id), { quantity: 13 }, '20 in the file, 7 held')
  await importProducts(app, [{ ...jug, quantity: 20 }])
  t.equal(await productStock(app, jug.id), 13, 'the same file again: the same')

  await importProducts(app, [{ ...jug, quantity: 5 }])
  t.match(await product(app, other, jug.id), { quantity: 0, isAvailable: false }, 'fewer in the file than held: 0, never less')
  // The older hold keeps its 4; the newer keeps the 1 left.
  t.equal((await release(app, key, newer.id)).statusCode, 204)
  t.equal(await productStock(app, jug.id), 1, 'the newer hold gave back the one unit it kept')
  const order = await postOrder(app, key, orderBody([{ productId: jug.id, quantity: 4 }], { reservationId: older.id }))
  t.equal(order.statusCode, 201, order.body)
  t.equal(await productStock(app, jug.id), 1, 'the older hold was whole')

  const short = (await hold(app, key, { items: [{ productId: jug.id, quantity: 1 }] })).json<Reservation>()
  await importProducts(app, [{ ...jug, quantity: 0 }])
  const refused = await postOrder(app, key, orderBody([{ productId: jug.id, quantity: 1 }], { reservationId: short.id }))
  expectCode(t, refused, 400, 'order_creation_failed', { message: /stock/ })
  await importProducts(app, [{ ...jug, quantity: 2 }])
  t.equal(await productStock(app, jug.id), 1, 'restocked: the hold is whole again')
  t.equal((await postOrder(app, key, orderBody([{ productId: jug.id, quantity: 1 }], { reservationId: short.id }))).statusCode, 201)
  t.equal(await productStock(app, jug.id), 1)
})
