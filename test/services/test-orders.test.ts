// purgeTestOrders, in process: test orders before the instant go with their items, their
// stored replays and their share of the key's count; live orders, stock and the catalogue
// stay; a purged order's Idempotency-Key no longer replays it (a new order, never a 500).
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { purgeTestOrders } from '../../services/test-orders.ts'
import { buildTestApp, created, getJson, importProducts, line, makeKey, makeProduct, orderBody, postOrder, UNLIMITED, type OrderPage } from '../helper.ts'

const app = await buildTestApp(t, { env: UNLIMITED })
const live = await makeKey(app)
const sandbox = await makeKey(app, undefined, { mode: 'test' })
const cup = makeProduct({ name: 'Purge Cup', price: 3, quantity: 6 })
await importProducts(app, [cup])

t.test('test orders before the instant are deleted; nothing else is', async (t) => {
  const liveOrder = await created(t, await postOrder(app, live.key, orderBody([line(cup, 2)])))
  const replayed = await created(t, await postOrder(app, sandbox.key, orderBody([line(cup, 1)]), { 'idempotency-key': 'first-try' }))
  await created(t, await postOrder(app, sandbox.key, orderBody([line(cup, 1)])))
  const cutoff = new Date()
  await execute(app.database.db, sql`update orders set created_at = created_at - interval '1 second' where mode = 'test'`)
  const [stock] = await execute<{ quantity: number }>(app.database.db, sql`select quantity from products where id = ${cup.id}`)

  t.equal(await purgeTestOrders(app.database, new Date(cutoff.getTime() - 60_000)), 0, 'none before an earlier instant')
  t.equal(await purgeTestOrders(app.database, cutoff), 2, 'both test orders')
  t.equal(await purgeTestOrders(app.database, cutoff), 0, 'and they are gone')

  const testList = (await getJson(app, sandbox.key, '/external/v1/orders')).json<OrderPage>()
  t.same([testList.items, testList.total], [[], 0], 'the test key has no orders left, and its total says so')
  const liveList = (await getJson(app, live.key, '/external/v1/orders')).json<OrderPage>()
  t.same(liveList.items.map((o) => o.id), [liveOrder.id], 'the live order stays')
  t.equal(liveList.total, 1)
  const [after] = await execute<{ quantity: number }>(app.database.db, sql`select quantity from products where id = ${cup.id}`)
  t.equal(after!.quantity, stock!.quantity, 'the stock is untouched')
  const [items] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from order_items`)
  t.equal(items!.n, 1, 'only the live order\'s item is left')

  const again = await postOrder(app, sandbox.key, orderBody([line(cup, 1)]), { 'idempotency-key': 'first-try' })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], undefined, 'the purged order is not replayed: a new one is made')
  t.not(again.json<{ id: string }>().id, replayed.id)
})
