// Idempotency-Key on create order: replays, a reused key with another body, keys per API
// key, expiry, and the clean-up of expired records.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../../db/client.ts'
import { deleteExpiredIdempotencyKeys } from '../../../db/idempotency.ts'
import {
  created, expectRefused, getJson, importProducts, line, makeProduct, orderBody, orderSnapshot, orderStore, PHONE, postOrder, productStock,
  type OrderSummary
} from '../../helper.ts'

const { app, key, keyId, otherKey } = await orderStore(t)

t.test('idempotency', async (t) => {
  const product = makeProduct({ name: 'Idempotent Jug', price: 4.2, quantity: 10 })
  await importProducts(app, [product])
  const body = orderBody([line(product, 1)], { note: 'idem' })
  const countOrders = async () => (await orderSnapshot(app)).orders

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
    t.equal(again.json<OrderSummary>().id, firstOrder.id)
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
    t.equal(replay.json<OrderSummary>().id, order.id, 'the new answer is what replays now')
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
    await expectRefused(t, app, () => postOrder(app, key, body, { 'idempotency-key': 'x'.repeat(256) }), 400, 'validation_failed', { details: true })
    await expectRefused(t, app, () => postOrder(app, key, body, { 'idempotency-key': 'has space' }), 400, 'validation_failed', { details: true })
  })
})
