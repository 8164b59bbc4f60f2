// Stock reservations as an integrator uses them: hold, read, release, order with the hold,
// the checks and codes, and the events they write.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { authHeaders, getJson, importProducts, makeKey, makeProduct, orderBody, postOrder, productStock } from '../helper.ts'
import { events, expectCode, hold, product, release, shirt, store, type Reservation } from '../reservations.ts'

t.test('a hold takes the units from what everyone sees, and a release gives them back at once', async (t) => {
  const { app, key, other } = await store(t)
  const vase = makeProduct({ name: 'Held Vase', price: 12.5, quantity: 2 })
  await importProducts(app, [vase])
  const before = await events(app, vase.id)

  const res = await hold(app, key, { items: [{ productId: vase.id, quantity: 2 }] })
  t.equal(res.statusCode, 201, res.body)
  const held = res.json<Reservation>()
  t.match(held, { id: String, status: 'active', items: [{ productId: vase.id, combinationId: null, quantity: 2 }], orderId: null })
  t.same(Object.keys(held).sort(), ['createdAt', 'expiresAt', 'id', 'items', 'orderId', 'status'])
  const ttl = Date.parse(held.expiresAt) - Date.parse(held.createdAt)
  t.equal(ttl, 900_000, 'ttlSeconds defaults to 900')
  t.match(res.headers.location, new RegExp(`/external/v1/reservations/${held.id}$`))

  t.match(await product(app, other, vase.id), { quantity: 0, isAvailable: false }, 'another key sees the stock without the held units')
  const available = await getJson(app, other, '/external/v1/products?isAvailable=true')
  t.notOk(available.json<{ items: Array<{ id: string }> }>().items.some((p) => p.id === vase.id), 'the isAvailable filter agrees')
  t.equal(await events(app, vase.id), before + 1, 'product.updated written with the hold')
  expectCode(t, await postOrder(app, other, orderBody([{ productId: vase.id, quantity: 1 }])), 400, 'order_creation_failed')
  const refused = await hold(app, other, { items: [{ productId: vase.id }] })
  expectCode(t, refused, 400, 'reservation_failed')
  t.match(refused.json(), { details: [{ path: 'items[0]', reason: 'out_of_stock', available: 0 }] })

  t.match((await getJson(app, key, `/external/v1/reservations/${held.id}`)).json(), { id: held.id, status: 'active' })
  expectCode(t, await getJson(app, other, `/external/v1/reservations/${held.id}`), 404, 'reservation_not_found')
  expectCode(t, await release(app, other, held.id), 404, 'reservation_not_found', { message: /reservation/ })

  const released = await release(app, key, held.id)
  t.equal(released.statusCode, 204)
  t.equal(released.body, '')
  t.match(await product(app, other, vase.id), { quantity: 2, isAvailable: true }, 'the units are back at once')
  t.equal(await events(app, vase.id), before + 2, 'product.updated written with the release')
  t.match((await getJson(app, key, `/external/v1/reservations/${held.id}`)).json(), { status: 'released', orderId: null })
  expectCode(t, await release(app, key, held.id), 409, 'reservation_not_active')
  expectCode(t, await getJson(app, key, `/external/v1/reservations/${randomUUID()}`), 404, 'reservation_not_found')
  expectCode(t, await getJson(app, key, '/external/v1/reservations/nope'), 400, 'validation_failed')
})

t.test('the checks and codes of a hold', async (t) => {
  const { app, key } = await store(t)
  const plate = makeProduct({ name: 'Held Plate', quantity: 3 })
  const hidden = makeProduct({ name: 'Hidden Plate', isAvailable: false })
  const tee = shirt()
  await importProducts(app, [plate, hidden, tee])
  const refuse = async (body: unknown, status: number, code: string) => {
    const res = await hold(app, key, body)
    expectCode(t, res, status, code)
    t.equal(await productStock(app, plate.id), 3, `${code}: nothing taken`)
    return res
  }
  await refuse({}, 400, 'items_required')
  await refuse({ items: [] }, 400, 'items_required')
  await refuse({ items: [{ productId: 'x' }] }, 400, 'invalid_item')
  await refuse({ items: [{ productId: plate.id, quantity: 0 }] }, 400, 'invalid_quantity')
  await refuse({ items: [{ productId: plate.id, quantity: '2' }] }, 400, 'invalid_quantity')
  await refuse({ items: [{ productId: plate.id }], ttlSeconds: 59 }, 400, 'validation_failed')
  await refuse({ items: [{ productId: plate.id }], ttlSeconds: 3601 }, 400, 'validation_failed')
  await refuse({ items: [{ productId: plate.id }], ttlSeconds: 90.5 }, 400, 'validation_failed')
  await refuse([1], 400, 'validation_failed')
  await refuse({ items: [{ productId: randomUUID() }] }, 400, 'invalid_item')
  const failed = await refuse({ items: [{ productId: plate.id, quantity: 2 }, { productId: hidden.id }, { productId: tee.id }, { productId: plate.id, quantity: 2 }] }, 400, 'reservation_failed')
  t.match(failed.json(), {
    message: /4 lines cannot be held/,
    details: [
      { path: 'items[0]', reason: 'out_of_stock', available: 3 },
      { path: 'items[1]', reason: 'unavailable' },
      { path: 'items[2]', reason: 'combination_required' },
      { path: 'items[3]', reason: 'out_of_stock', available: 3 }
    ]
  })
  const wrongType = await app.inject({ method: 'POST', url: '/external/v1/reservations', headers: { ...authHeaders(key), 'content-type': 'text/plain' }, payload: 'x' })
  expectCode(t, wrongType, 415, 'unsupported_media_type')
  const { key: reader } = await makeKey(app, ['products:list'])
  expectCode(t, await hold(app, reader, { items: [{ productId: plate.id }] }), 403, 'insufficient_scope')

  const body = { items: [{ productId: plate.id }] }
  const first = await hold(app, key, body, { 'idempotency-key': 'hold-1' })
  t.equal(first.statusCode, 201)
  const replay = await hold(app, key, body, { 'idempotency-key': 'hold-1' })
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal(replay.json<Reservation>().id, first.json<Reservation>().id)
  t.equal(await productStock(app, plate.id), 2, 'held once')
  expectCode(t, await hold(app, key, { items: [{ productId: plate.id, quantity: 2 }] }, { 'idempotency-key': 'hold-1' }), 422, 'idempotency_key_reused')
  expectCode(t, await postOrder(app, key, orderBody([{ productId: plate.id }]), { 'idempotency-key': 'hold-1' }), 422, 'idempotency_key_reused')
  expectCode(t, await hold(app, key, body, { 'idempotency-key': 'bad key' }), 400, 'validation_failed')
})
