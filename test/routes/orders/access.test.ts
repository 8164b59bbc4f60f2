// Who may use the order endpoints and when: a scope for each, and maintenance stopping
// create order only.
import t from 'tap'
import { writeSetting } from '../../../db/settings.ts'
import { SCOPES, type Scope } from '../../../lib/api-key-secret.ts'
import {
  created, expectError, expectRefused, getJson, importProducts, line, makeKey, makeProduct, orderBody, orderStore, pollState, postOrder, productStock, type OrderPage
} from '../../helper.ts'

const { app, key, products: { dime } } = await orderStore(t)

t.test('scopes: 403 insufficient_scope for each order endpoint', async (t) => {
  const without = (scope: Scope) => makeKey(app, SCOPES.filter((s) => s !== scope), { name: `without ${scope}` })

  t.test('create needs orders:create', async (t) => {
    const { key: k } = await without('orders:create')
    await expectRefused(t, app, () => postOrder(app, k, orderBody([line(dime, 1)])), 403, 'insufficient_scope', { message: /orders:create/ })
  })

  t.test('list needs orders:list', async (t) => {
    const { key: k } = await without('orders:list')
    expectError(t, await getJson(app, k, '/external/v1/orders'), 403, 'insufficient_scope', { message: /orders:list/ })
  })

  t.test('get needs orders:find', async (t) => {
    const { key: k } = await without('orders:find')
    const order = await created(t, await postOrder(app, k, orderBody([line(dime, 1)])))
    expectError(t, await getJson(app, k, `/external/v1/orders/${order.id}`), 403, 'insufficient_scope', { message: /orders:find/ })
    expectError(t, await getJson(app, k, `/external/v1/orders/${order.orderNumber}`), 403, 'insufficient_scope', { message: /orders:find/ })
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
    await pollState(app)
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
