// Idempotency-Key replays survive upgrades: a response stored in an older shape of Order
// (before a field was added) replays as the same order in today's shape, never a 500.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { ORDER_SHAPE_VERSION, SHAPE_BEFORE_MODE } from '../../schemas/orders.ts'
import { buildTestApp, importProducts, makeKey, makeProduct, postOrder } from '../helper.ts'

const app = await buildTestApp(t)
const { id: apiKeyId, key } = await makeKey(app)
const product = makeProduct({ quantity: 10 })
await importProducts(app, [product])

const body = { customerName: 'Grace Hopper', customerPhone: '+14155550123', note: 'ring twice', items: [{ productId: product.id, quantity: 2 }] }
const post = (idempotencyKey: string) => postOrder(app, key, body, { 'idempotency-key': idempotencyKey })

t.test('a record of the current shape replays exactly what was stored', async (t) => {
  const first = await post('same-shape')
  t.equal(first.statusCode, 201)
  const [row] = await execute<{ response_version: number }>(app.database.db, sql`select response_version from idempotency_keys where key = 'same-shape'`)
  t.equal(row!.response_version, ORDER_SHAPE_VERSION, 'stored with the shape version it was made in')
  const again = await post('same-shape')
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json())
})

t.test('a record stored in an older shape replays the same order in today\'s shape', async (t) => {
  const first = await post('older-shape')
  const order = first.json<Record<string, unknown>>()
  // What an older release would have stored: the same order without a field added since.
  const { note: _note, mode: _mode, ...older } = order
  await execute(app.database.db, sql`update idempotency_keys set response_version = ${SHAPE_BEFORE_MODE - 1},
    response_body = ${JSON.stringify(older)}::jsonb where api_key_id = ${apiKeyId} and key = 'older-shape'`)
  const replayed = await post('older-shape')
  t.equal(replayed.statusCode, 201, 'no 500 from a stored body today\'s schema would refuse')
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  t.equal(replayed.headers.location, first.headers.location)
  t.same(replayed.json(), order, 'the same order, with every field of today\'s shape')
  const [count] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from orders`)
  t.equal(count!.n, 2, 'nothing new was created')
})

t.test('a live order stored before orders had a mode replays with mode live, without reading the order again', async (t) => {
  const first = await post('before-mode')
  const order = first.json<Record<string, unknown>>()
  t.equal(order.mode, 'live')
  const { mode: _mode, ...older } = order
  await execute(app.database.db, sql`update idempotency_keys set response_version = ${SHAPE_BEFORE_MODE},
    response_body = ${JSON.stringify(older)}::jsonb where api_key_id = ${apiKeyId} and key = 'before-mode'`)
  // The stored body is what answers: a change to the row since does not show in the replay.
  await execute(app.database.db, sql`update orders set note = 'changed since' where id = ${order.id as string}`)
  const replayed = await post('before-mode')
  t.equal(replayed.statusCode, 201)
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  t.same(replayed.json(), order, 'the stored order with mode live added')
})

t.test('a test order replays as the test order it made', async (t) => {
  const { key: testKey } = await makeKey(app, undefined, { mode: 'test' })
  const send = () => postOrder(app, testKey, body, { 'idempotency-key': 'test-order' })
  const first = await send()
  t.equal(first.statusCode, 201)
  t.match(first.json(), { mode: 'test', orderNumber: /^T\d+$/ })
  const again = await send()
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json())
  const reused = await postOrder(app, testKey, { ...body, note: 'other' }, { 'idempotency-key': 'test-order' })
  t.equal(reused.statusCode, 422, 'a different body with the same key is refused as in live mode')
  t.equal(reused.json<{ error: string }>().error, 'idempotency_key_reused')
  const [count] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from orders where mode = 'test'`)
  t.equal(count!.n, 1, 'one test order')
})
