// Stock reservations: the per-key limit, test keys' holds, the metrics, maintenance.
import t from 'tap'
import { writeSetting } from '../../db/settings.ts'
import { getJson, importProducts, makeKey, makeProduct, orderBody, pollState, postOrder, productStock } from '../helper.ts'
import { events, expectCode, hold, product, release, store, type Reservation } from '../reservations.ts'

t.test('at most 100 active reservations per key', async (t) => {
  const { app, key, other } = await store(t)
  const napkin = makeProduct({ name: 'Limit Napkin', quantity: null })
  await importProducts(app, [napkin])
  const body = { items: [{ productId: napkin.id }] }
  const ids: string[] = []
  for (let i = 0; i < 100; i++) ids.push((await hold(app, key, body)).json<Reservation>().id)
  expectCode(t, await hold(app, key, body), 400, 'reservation_limit_reached')
  // The limit is told before the lines are judged: a line that could not be held changes nothing of the answer.
  expectCode(t, await hold(app, key, { items: [{ productId: crypto.randomUUID() }] }), 400, 'reservation_limit_reached')
  t.equal((await hold(app, other, body)).statusCode, 201, 'another key is not limited by it')
  t.equal((await release(app, key, ids[0]!)).statusCode, 204)
  t.equal((await hold(app, key, body)).statusCode, 201, 'one released, one more may be held')
})

t.test('a test key\'s reservation is checked the same way and holds nothing', async (t) => {
  const { app, key } = await store(t)
  const { key: testKey } = await makeKey(app, undefined, { mode: 'test' })
  const cup = makeProduct({ name: 'Test Cup', quantity: 2 })
  await importProducts(app, [cup])
  const before = await events(app, cup.id)
  expectCode(t, await hold(app, testKey, { items: [{ productId: cup.id, quantity: 3 }] }), 400, 'reservation_failed')
  const held = (await hold(app, testKey, { items: [{ productId: cup.id, quantity: 2 }] })).json<Reservation>()
  t.equal(held.status, 'active')
  t.match(await product(app, key, cup.id), { quantity: 2, isAvailable: true }, 'nothing held')
  t.equal(await events(app, cup.id), before, 'no event')
  const res = await postOrder(app, testKey, orderBody([{ productId: cup.id, quantity: 2 }], { reservationId: held.id }))
  t.equal(res.statusCode, 201, res.body)
  t.match(res.json(), { mode: 'test' })
  t.match((await getJson(app, testKey, `/external/v1/reservations/${held.id}`)).json(), { status: 'consumed' })
  expectCode(t, await getJson(app, key, `/external/v1/reservations/${held.id}`), 404, 'reservation_not_found')
  t.equal(await productStock(app, cup.id), 2)
})

t.test('the metrics count holds, releases and expiries', async (t) => {
  const { app, key } = await store(t)
  const fork = makeProduct({ name: 'Metric Fork', quantity: 9 })
  await importProducts(app, [fork])
  const a = (await hold(app, key, { items: [{ productId: fork.id, quantity: 2 }] })).json<Reservation>()
  await hold(app, key, { items: [{ productId: fork.id, quantity: 3 }] })
  await release(app, key, a.id)
  const text = (await app.inject({ url: '/metrics' })).body
  t.match(text, /storefront_reservations_created_total 2/)
  t.match(text, /storefront_reservations_ended_total\{how="released"\} 1/)
  t.match(text, /storefront_reservations_active\{measure="reservations"\} 1/)
  t.match(text, /storefront_reservations_active\{measure="units"\} 3/)
})

t.test('under maintenance no stock is held', async (t) => {
  const { app, key } = await store(t)
  const pan = makeProduct({ name: 'Maintenance Pan', quantity: 2 })
  await importProducts(app, [pan])
  await writeSetting(app.database.db, 'maintenance', true)
  await pollState(app)
  const res = await hold(app, key, { items: [{ productId: pan.id }] })
  expectCode(t, res, 503, 'store_under_maintenance')
  t.match(res.headers['retry-after'], /^\d+$/)
  t.equal(await productStock(app, pan.id), 2)
})
