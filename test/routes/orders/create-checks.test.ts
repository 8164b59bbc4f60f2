// Create order, the checks a body goes through: every error code in the contract's order,
// each answered before anything changes, and the edge values each check still accepts.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../../db/client.ts'
import { writeSetting } from '../../../db/settings.ts'
import {
  created, expectRefused, getJson, line, orderBody, orderRow, orderStore, PHONE, pollState, postOrder, productStock, UK_PHONE, type FullOrder
} from '../../helper.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const { app, key, products: { plain, dime, hidden, shirt, hiddenShirt }, combinations: { RED_L, BLUE_S, RED_S, BLUE_L, CAP_ONE, HIDDEN_SHIRT_ONE } } = await orderStore(t)

t.test('create order: every error code, in the contract order, changing nothing', async (t) => {
  const post = (body: unknown, headers?: Record<string, string | undefined>) => () => postOrder(app, key, body, headers)
  // Every code of this section answers 400.
  // Schema errors list what failed, and so do this section's order_creation_failed (every one is per line).
  const refused = (t: T, body: unknown, code: string, message?: RegExp) =>
    expectRefused(t, app, post(body), 400, code, { message, details: code === 'validation_failed' || code === 'order_creation_failed' })

  const good = [line(plain, 1)]
  const { customerName: _n, ...noName } = orderBody(good)
  const { items: _i, ...noItems } = orderBody(good)
  const { customerPhone: _p, ...noPhone } = orderBody(good)

  t.test('customer_name_required', async (t) => {
    // Missing or blank says so; a value that is no string says what it must be.
    const required = /^customerName is required and must not be blank$/
    const cases: Array<[string, unknown, RegExp]> = [
      ['missing', noName, required],
      ['empty', orderBody(good, { customerName: '' }), required],
      ['whitespace only', orderBody(good, { customerName: ' \t\n ' }), required],
      ['a number', orderBody(good, { customerName: 42 }), /^customerName must be a string, not a number$/],
      ['null', orderBody(good, { customerName: null }), required],
      ['a boolean', orderBody(good, { customerName: true }), /^customerName must be a string, not a boolean$/],
      ['an array', orderBody(good, { customerName: ['Ada'] }), /^customerName must be a string, not an array$/],
      ['an object', orderBody(good, { customerName: { first: 'Ada' } }), /^customerName must be a string, not an object$/]
    ]
    for (const [name, body, message] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'customer_name_required', message) })
    }
  })

  t.test('items_required', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['missing', noItems],
      ['an empty array', orderBody([])],
      ['an object, not an array', orderBody({ productId: plain.id })],
      ['a string', orderBody('plain')],
      ['null', orderBody(null)]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'items_required', /items/) })
    }
  })

  t.test('invalid_item', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['productId not a GUID', orderBody([{ productId: 'not-a-guid', quantity: 1 }])],
      ['productId almost a GUID', orderBody([{ productId: `${plain.id}0` }])],
      ['productId missing', orderBody([{ quantity: 1 }])],
      ['productId a number', orderBody([{ productId: 12 }])],
      ['an item that is not an object', orderBody(['x'])],
      ['an item that is null', orderBody([null])],
      ['the second line has a bad productId', orderBody([line(plain, 1), { productId: 'nope' }])],
      ['a GUID matching no product', orderBody([line({ id: randomUUID() }, 1)])],
      ['a GUID matching no product on the second line', orderBody([line(plain, 1), line({ id: randomUUID() }, 1)])]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'invalid_item') })
    }
  })

  t.test('invalid_quantity', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['0', 0], ['-1', -1], ['1.5', 1.5], ['the string "2"', '2'], ['null', null], ['100001', 100001], ['true', true], ['an array', [1]]
    ]
    for (const [name, quantity] of cases) {
      await t.test(name, async (t) => {
        await refused(t, orderBody([{ productId: plain.id, quantity }]), 'invalid_quantity', /quantity/)
      })
    }
    await t.test('on a second line', async (t) => {
      await refused(t, orderBody([line(plain, 1), { productId: dime.id, quantity: 0 }]), 'invalid_quantity')
    })
  })

  t.test('invalid_phone_number', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['customerPhone missing', noPhone],
      ['customerPhone empty', orderBody(good, { customerPhone: '' })],
      ['customerPhone blank', orderBody(good, { customerPhone: '   ' })],
      ['customerPhone a number', orderBody(good, { customerPhone: 12133734253 })],
      ['customerPhone null', orderBody(good, { customerPhone: null })],
      ['customerPhone too short', orderBody(good, { customerPhone: '+1213' })],
      ['customerPhone letters', orderBody(good, { customerPhone: 'call me maybe' })],
      ['a national number without country nor store default', orderBody(good, { customerPhone: '(213) 373-4253' })],
      ['a national number with a country that is not alpha-2', orderBody(good, { customerPhone: '(213) 373-4253', address: { country: 'United States' } })],
      ['a national number of another country than address.country', orderBody(good, { customerPhone: '030 12345678', address: { country: 'US' } })],
      ['a bad address.phone beside a good customerPhone', orderBody(good, { address: { city: 'Berlin', phone: 'not a phone' } })],
      ['a blank address.phone', orderBody(good, { address: { phone: ' ' } })],
      ['a national address.phone without a region', orderBody(good, { address: { phone: '2133734253' } })]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'invalid_phone_number', /phone/) })
    }
  })

  t.test('the first failing check answers', async (t) => {
    const cases: Array<[string, unknown, string]> = [
      ['blank name and empty items', orderBody([], { customerName: ' ' }), 'customer_name_required'],
      ['a non-string name and a bad productId', orderBody([{ productId: 'x' }], { customerName: 7 }), 'customer_name_required'],
      ['missing name and a bad phone', { items: good, customerPhone: 'x' }, 'customer_name_required'],
      ['items not an array and a bad phone', orderBody('x', { customerPhone: 'x' }), 'items_required'],
      ['empty items and a bad phone', orderBody([], { customerPhone: '' }), 'items_required'],
      ['a bad productId and a bad quantity', orderBody([{ productId: 'x', quantity: 0 }]), 'invalid_item'],
      ['a bad quantity on line 1, a bad productId on line 2', orderBody([line(plain, 0), { productId: 'x' }]), 'invalid_item'],
      ['a bad quantity and a bad phone', orderBody([line(plain, 0)], { customerPhone: 'x' }), 'invalid_quantity'],
      ['a bad quantity and an unknown product', orderBody([line({ id: randomUUID() }, 1.5)]), 'invalid_quantity'],
      ['a bad phone and an unknown product', orderBody([line({ id: randomUUID() }, 1)], { customerPhone: '' }), 'invalid_phone_number'],
      ['a bad phone and not enough stock', orderBody([line(plain, 1000)], { customerPhone: '123' }), 'invalid_phone_number'],
      ['a bad phone and an unavailable product', orderBody([line(hidden, 1)], { customerPhone: '123' }), 'invalid_phone_number'],
      ['a bad phone and another schema error', orderBody(good, { customerPhone: '123', note: 42 }), 'invalid_phone_number'],
      ['a schema error and not enough stock', orderBody([line(plain, 1000)], { note: 42 }), 'validation_failed'],
      ['a schema error and an unknown product', orderBody([line({ id: randomUUID() }, 1)], { note: 42 }), 'validation_failed'],
      // Catalogue checks: invalid_item for unknown products comes before order_creation_failed.
      ['an unavailable product on line 1, an unknown product on line 2', orderBody([line(hidden, 1), line({ id: randomUUID() }, 1)]), 'invalid_item']
    ]
    for (const [name, body, code] of cases) {
      await t.test(name, async (t) => { await refused(t, body, code) })
    }
  })

  t.test('order_creation_failed, with the reason in the message', async (t) => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['not enough stock', orderBody([line(plain, 11)]), /stock/i],
      ['two lines of the same product whose sum exceeds stock', orderBody([line(plain, 6), line(dime, 1), line(plain, 5)]), /stock/i],
      ['two lines of the same combination whose sum exceeds stock', orderBody([line(shirt, 3, RED_L), line(shirt, 3, RED_L)]), /stock/i],
      ['not enough stock of a combination', orderBody([line(shirt, 3, BLUE_L)]), /stock/i],
      ['an unavailable product', orderBody([line(hidden, 1)]), /not available/i],
      ['an unavailable combination', orderBody([line(shirt, 1, RED_S)]), /not available/i],
      ['an available combination of an unavailable product', orderBody([line(hiddenShirt, 1, HIDDEN_SHIRT_ONE)]), /not available/i],
      ['a product with combinations but no combinationId', orderBody([line(shirt, 1)]), /combination/i],
      ['a product with combinations and combinationId null', orderBody([line(shirt, 1, null)]), /combination/i],
      ['a combinationId of another product', orderBody([line(shirt, 1, CAP_ONE)]), /combination/i],
      ['a combinationId on a product without combinations', orderBody([line(plain, 1, RED_L)]), /combination/i],
      ['a combinationId matching no combination', orderBody([line(shirt, 1, randomUUID())]), /combination/i]
    ]
    for (const [name, body, message] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'order_creation_failed', message) })
    }
  })

  t.test('415 unsupported_media_type without application/json', async (t) => {
    const body = JSON.stringify(orderBody(good))
    await t.test('a text/plain body', async (t) => {
      await expectRefused(t, app, post(body, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
    })
    await t.test('no content-type and no body', async (t) => {
      await expectRefused(t, app, post(undefined, { 'content-type': undefined }), 415, 'unsupported_media_type')
    })
    await t.test('a form body', async (t) => {
      await expectRefused(t, app, post('customerName=Ada', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type')
    })
    await t.test('application/json with a charset is accepted', async (t) => {
      const res = await postOrder(app, key, orderBody([line(dime, 1)]), { 'content-type': 'application/json; charset=utf-8' })
      t.equal(res.statusCode, 201)
    })
  })

  t.test('validation_failed', async (t) => {
    const cases: Array<[string, unknown]> = [
      ['more than 500 lines', orderBody(Array.from({ length: 501 }, () => line(dime, 1)))],
      ['a JSON array', [orderBody(good)]],
      ['JSON null', 'null'],
      ['a JSON string', '"an order"'],
      ['a JSON number', '42'],
      ['a note that is not a string', orderBody(good, { note: 42 })],
      ['an address that is not an object', orderBody(good, { address: 'Main Street 1' })],
      ['a combinationId that is not a GUID', orderBody([{ productId: shirt.id, combinationId: 'red-l' }])],
      ['a combinationId in urn:uuid: form', orderBody([{ productId: shirt.id, combinationId: `urn:uuid:${BLUE_S}` }])],
      ['a latitude out of range', orderBody(good, { address: { latitude: 123 } })]
    ]
    for (const [name, body] of cases) {
      await t.test(name, async (t) => { await refused(t, body, 'validation_failed') })
    }
  })

  t.test('invalid_json', async (t) => {
    for (const [name, raw] of [['truncated JSON', '{"customerName": "Ada", "items": ['], ['not JSON at all', 'customer=Ada'], ['an empty body', '']]) {
      await t.test(name!, async (t) => { await refused(t, raw, 'invalid_json') })
    }
  })
})

t.test('create order: quantities and phones that are accepted', async (t) => {
  t.test('an omitted quantity means 1', async (t) => {
    const before = await productStock(app, plain.id)
    const order = await created(t, await postOrder(app, key, orderBody([{ productId: plain.id }])))
    t.equal(order.productsCount, 1)
    t.equal(order.total, 10)
    t.equal(await productStock(app, plain.id), before! - 1)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
    t.equal(full.items[0]!.quantity, 1)
  })

  t.test('the largest quantity, 100000, is accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 100000)])))
    t.equal(order.productsCount, 100000)
    t.equal(order.total, 10000)
  })

  t.test('exactly 500 lines are accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody(Array.from({ length: 500 }, () => line(dime, 1)))))
    t.equal(order.productsCount, 500)
    t.equal(order.total, 50)
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
    t.equal(full.items.length, 500)
  })

  t.test('an upper-case productId and combinationId are accepted', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line({ id: shirt.id.toUpperCase() }, 1, BLUE_S.toUpperCase())])))
    const full = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
    t.match(full.items[0], { productId: shirt.id, combinationId: BLUE_S })
  })

  t.test('a national number with an ISO alpha-2 address.country is stored in E.164', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { customerPhone: '(213) 373-4253', address: { country: 'US', city: 'Los Angeles' } })))
    t.equal(order.customerPhone, '+12133734253')
    const row = await orderRow(app, order.id)
    t.equal(row!.customer_phone, '+12133734253')
    t.equal(row!.address!.phone, '+12133734253', 'the delivery phone defaults to customerPhone, in E.164')
  })

  t.test('address.phone is read in address.country and stored in E.164', async (t) => {
    const order = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { address: { country: 'gb', phone: '020 7946 0958' } })))
    t.equal(order.customerPhone, PHONE)
    t.equal((await orderRow(app, order.id))!.address!.phone, UK_PHONE)
  })

  t.test('the store default country reads national numbers', async (t) => {
    t.teardown(async () => {
      await execute(app.database.db, sql`delete from store_settings where name = 'defaultCountry'`)
      await pollState(app)
    })
    const body = orderBody([line(dime, 1)], { customerPhone: '213-373-4253' })
    await expectRefused(t, app, () => postOrder(app, key, body), 400, 'invalid_phone_number')

    await writeSetting(app.database.db, 'defaultCountry', 'US')
    await pollState(app)
    const order = await created(t, await postOrder(app, key, body))
    t.equal(order.customerPhone, '+12133734253')
    t.equal((await orderRow(app, order.id))!.customer_phone, '+12133734253')

    const uk = await created(t, await postOrder(app, key, orderBody([line(dime, 1)], { customerPhone: '020 7946 0958', address: { country: 'GB' } })))
    t.equal(uk.customerPhone, UK_PHONE, 'address.country wins over the store default')
  })
})
