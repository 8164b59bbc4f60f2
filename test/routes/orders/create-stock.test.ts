// Create order, the stock: an order takes all of its stock or none of it.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import {
  combinationStock, created, expectRefused, importProducts, line, makeProduct, orderBody, orderStore, postOrder, productStock
} from '../../helper.ts'

const { app, key, products: { shirt }, combinations: { RED_L, RED_S, BLUE_L } } = await orderStore(t)

t.test('all or nothing', async (t) => {
  const first = makeProduct({ name: 'First Bowl', price: 3, quantity: 10 })
  const second = makeProduct({ name: 'Second Bowl', price: 4, quantity: 1 })
  await importProducts(app, [first, second])

  t.test('a second line without enough stock takes nothing from the first', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line(second, 5)])), 400, 'order_creation_failed', { details: true, message: /stock/i })
    t.equal(await productStock(app, first.id), 10)
    t.equal(await productStock(app, second.id), 1)
  })

  t.test('a later unknown product takes nothing from the first', async (t) => {
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line({ id: randomUUID() }, 1)])), 400, 'invalid_item')
    t.equal(await productStock(app, first.id), 10)
  })

  t.test('a later unavailable combination takes nothing from earlier lines', async (t) => {
    const redL = await combinationStock(app, RED_L)
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(first, 2), line(shirt, 1, RED_L), line(shirt, 1, RED_S)])), 400, 'order_creation_failed', { details: true })
    t.equal(await productStock(app, first.id), 10)
    t.equal(await combinationStock(app, RED_L), redL)
  })

  t.test('then a good order takes exactly its stock', async (t) => {
    await created(t, await postOrder(app, key, orderBody([line(first, 2), line(second, 1)])))
    t.equal(await productStock(app, first.id), 8)
    t.equal(await productStock(app, second.id), 0)
    await expectRefused(t, app, () => postOrder(app, key, orderBody([line(second, 1)])), 400, 'order_creation_failed', { details: true, message: /stock/i })
  })

  t.test('a combination\'s stock is taken from the combination', async (t) => {
    const before = await combinationStock(app, BLUE_L)
    await created(t, await postOrder(app, key, orderBody([line(shirt, 1, BLUE_L)])))
    t.equal(await combinationStock(app, BLUE_L), before! - 1)
    t.equal(await productStock(app, shirt.id), null, 'the product row holds no stock of its own')
  })
})
