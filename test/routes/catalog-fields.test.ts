// What integrators asked for: products carry barcode, categoryIds, brandId and updatedAt;
// isAvailable means "can be ordered now" in responses and in the filter; categories and
// brands are listed with their product counts; orders carry deliveryFee, address and updatedAt.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { writeSetting } from '../../db/settings.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, pollState, sleep } from '../helper.ts'

const app = await buildTestApp(t)
const { key } = await makeKey(app)
const headers = authHeaders(key)
const get = async <T = Record<string, unknown>>(url: string) => {
  const res = await app.inject({ url, headers })
  t.equal(res.statusCode, 200, url)
  return res.json<T>()
}

const CATEGORY = { a: 'c0000000-0000-4000-8000-00000000000a', b: 'c0000000-0000-4000-8000-00000000000b', empty: 'c0000000-0000-4000-8000-00000000000c' }
const BRAND = { z: 'b0000000-0000-4000-8000-00000000000f', y: 'b0000000-0000-4000-8000-00000000000e' }
const OPTION = { s: crypto.randomUUID(), m: crypto.randomUUID() }

const inStock = makeProduct({ name: 'In stock', barcode: '4006381333931', quantity: 3, categoryIds: [CATEGORY.b, CATEGORY.a], brandId: BRAND.z })
const soldOut = makeProduct({ name: 'Sold out', quantity: 0, categoryIds: [CATEGORY.a] })
const untracked = makeProduct({ name: 'Untracked', quantity: null, brandId: BRAND.y })
const marked = makeProduct({ name: 'Marked unavailable', quantity: 9, isAvailable: false })
const variants = [{ id: crypto.randomUUID(), name: 'Size', options: [{ id: OPTION.s, name: 'S' }, { id: OPTION.m, name: 'M' }] }]
const oneLeft = makeProduct({
  name: 'One combination left',
  variants,
  combinations: [
    { id: crypto.randomUUID(), optionIds: [OPTION.s], quantity: 0, price: 5, isAvailable: true },
    { id: crypto.randomUUID(), optionIds: [OPTION.m], quantity: 1, price: 5, isAvailable: true }
  ]
})
const noneLeft = makeProduct({
  name: 'No combination left',
  variants: structuredClone(variants).map((v) => ({ ...v, id: crypto.randomUUID(), options: v.options.map((o) => ({ ...o, id: crypto.randomUUID() })) })),
  combinations: []
})
noneLeft.combinations = noneLeft.variants![0]!.options.map((o, i) => ({ id: crypto.randomUUID(), optionIds: [o.id], quantity: i === 0 ? 0 : 4, price: 5, isAvailable: i === 0 }))
const catalog = {
  categories: [{ id: CATEGORY.b, name: 'beta' }, { id: CATEGORY.a, name: 'Alpha' }, { id: CATEGORY.empty, name: 'Gamma' }],
  brands: [{ id: BRAND.z, name: 'Zeta' }, { id: BRAND.y, name: 'ypsilon' }],
  products: [inStock, soldOut, untracked, marked, oneLeft, noneLeft]
}
await importProducts(app, catalog)

t.test('a product carries barcode, sorted categoryIds, brandId and updatedAt', async (t) => {
  const product = await get(`/external/v1/products/${inStock.id}`)
  t.match(product, { barcode: '4006381333931', categoryIds: [CATEGORY.a, CATEGORY.b], brandId: BRAND.z, isAvailable: true })
  t.match(product.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.match(await get(`/external/v1/products/${untracked.id}`), { barcode: null, categoryIds: [], brandId: BRAND.y })
})

t.test('isAvailable: marked unavailable or tracked stock 0 is false; with combinations, when one is', async (t) => {
  const availability = async (id: string) => (await get<{ isAvailable: boolean, combinations: Array<{ isAvailable: boolean }> }>(`/external/v1/products/${id}`))
  t.equal((await availability(inStock.id)).isAvailable, true)
  t.equal((await availability(soldOut.id)).isAvailable, false, 'tracked stock 0')
  t.equal((await availability(untracked.id)).isAvailable, true, 'untracked stock')
  t.equal((await availability(marked.id)).isAvailable, false, 'marked unavailable, with stock')
  const one = await availability(oneLeft.id)
  t.equal(one.isAvailable, true, 'one combination can be ordered')
  t.same(one.combinations.map((c) => c.isAvailable), [false, true])
  const none = await availability(noneLeft.id)
  t.equal(none.isAvailable, false, 'one combination sold out, the other marked unavailable')
  t.same(none.combinations.map((c) => c.isAvailable), [false, false])

  const names = async (filter: string) => (await get<{ items: Array<{ name: string }> }>(`/external/v1/products?isAvailable=${filter}`)).items.map((p) => p.name)
  t.same(await names('true'), ['In stock', 'One combination left', 'Untracked'])
  t.same(await names('false'), ['Marked unavailable', 'No combination left', 'Sold out'])
})

t.test('the last unit sold makes a product unavailable, in responses and in the filter', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: oneLeft.id, combinationId: oneLeft.combinations![1]!.id }] }
  })
  t.equal(res.statusCode, 201)
  t.equal((await get<{ isAvailable: boolean }>(`/external/v1/products/${oneLeft.id}`)).isAvailable, false)
  t.notOk((await get<{ items: Array<{ id: string }> }>('/external/v1/products?isAvailable=true')).items.some((p) => p.id === oneLeft.id))
})

t.test('the isAvailable filter can be served by an index', async (t) => {
  // Six rows read faster without an index; with scans off, the plan shows the index applies.
  const plan = await app.database.db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_seqscan = off`)
    return (await execute<Record<string, string>>(tx, sql`explain select id from products p where p.available = true order by lower(p.name), p.id limit 25`))
      .map((row) => Object.values(row)[0]).join('\n')
  })
  t.match(plan, /products_available_name_idx/)
})

t.test('categories and brands: pages of { id, name, productCount } by name', async (t) => {
  t.same(await get('/external/v1/categories'), {
    items: [
      { id: CATEGORY.a, name: 'Alpha', productCount: 2 },
      { id: CATEGORY.b, name: 'beta', productCount: 1 },
      { id: CATEGORY.empty, name: 'Gamma', productCount: 0 }
    ],
    page: 1,
    pageSize: 25,
    total: 3,
    nextCursor: null
  })
  t.same(await get('/external/v1/brands'), {
    items: [{ id: BRAND.y, name: 'ypsilon', productCount: 1 }, { id: BRAND.z, name: 'Zeta', productCount: 1 }],
    page: 1,
    pageSize: 25,
    total: 2,
    nextCursor: null
  })
  t.same(await get('/external/v1/brands?page=2'), { items: [], page: 2, pageSize: 25, total: 2, nextCursor: null })
  const { key: ordersOnly } = await makeKey(app, ['orders:list'])
  const refused = await app.inject({ url: '/external/v1/categories', headers: authHeaders(ordersOnly) })
  t.equal(refused.statusCode, 403, 'scope products:list')
})

t.test('updatedAt: an import that changes nothing keeps it; a change, stock taken and a discount window move it', async (t) => {
  const updatedAt = async (id: string) => (await get<{ updatedAt: string }>(`/external/v1/products/${id}`)).updatedAt
  const first = await updatedAt(untracked.id)
  await sleep(5)
  await importProducts(app, catalog)
  t.equal(await updatedAt(untracked.id), first, 'the same file again: unchanged')
  await importProducts(app, { products: [{ ...untracked, name: 'Untracked, renamed' }] })
  const renamed = await updatedAt(untracked.id)
  t.ok(renamed > first, 'a renamed product moves')

  const before = await updatedAt(inStock.id)
  await sleep(5)
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: inStock.id }] }
  })
  t.equal(res.statusCode, 201)
  const afterOrder = await updatedAt(inStock.id)
  t.ok(afterOrder > before, 'stock taken moves it')
  await sleep(5)
  await importProducts(app, catalog)
  t.ok(await updatedAt(inStock.id) > afterOrder, 'importing the old stock back is a change too')

  // A discount that starts a moment from now: the sweep moves updatedAt once it has started.
  const startsAt = new Date(Date.now() + 2000).toISOString()
  await importProducts(app, { products: [{ ...marked, discount: { type: 'percentage', value: 10, startsAt, endsAt: null } }] })
  const imported = await updatedAt(marked.id)
  const { markDiscountBoundaries } = await import('../../services/catalog.ts')
  t.equal(await markDiscountBoundaries(app.stock, 60_000), 0, 'before it starts, nothing moves')
  await sleep(Math.max(0, new Date(startsAt).getTime() - Date.now()) + 50)
  t.equal(await markDiscountBoundaries(app.stock, 60_000), 1, 'once started, that product moves')
  t.ok(await updatedAt(marked.id) > imported)
  t.equal(await markDiscountBoundaries(app.stock, 60_000), 0, 'and only once')
})

t.test('an order carries deliveryFee, its address as sent (phone in E.164) and updatedAt', async (t) => {
  await writeSetting(app.database.db, 'deliveryFee', '4.99')
  await pollState(app)
  const post = (payload: Record<string, unknown>) => app.inject({
    method: 'POST', url: '/external/v1/orders', headers: { ...headers, 'content-type': 'application/json' }, payload
  })
  const withAddress = await post({
    customerName: 'Ada',
    customerPhone: '+14155550123',
    items: [{ productId: untracked.id, quantity: 2 }],
    address: { lineOne: '1 Main St', city: 'Springfield', country: 'US', phone: '(415) 555-0199' }
  })
  t.equal(withAddress.statusCode, 201)
  const created = withAddress.json<Record<string, unknown>>()
  t.match(created, {
    deliveryFee: 4.99,
    address: { lineOne: '1 Main St', lineTwo: null, city: 'Springfield', state: null, country: 'US', zipCode: null, phone: '+14155550199', latitude: null, longitude: null }
  })
  t.equal(created.finalTotal, Math.round(((created.total as number) + 4.99) * 100) / 100, 'finalTotal = total + deliveryFee')
  t.equal(created.updatedAt, created.date)
  const fetched = await get<Record<string, unknown>>(`/external/v1/orders/${String(created.id)}`)
  const { items: _items, ...summary } = fetched
  t.same(summary, created, 'get answers the same fields')
  const listed = await get<{ items: Array<Record<string, unknown>> }>('/external/v1/orders')
  t.same(listed.items.find((o) => o.id === created.id), created, 'and so does the list')

  const without = (await post({ customerName: 'Bo', customerPhone: '+14155550123', items: [{ productId: untracked.id }] })).json<Record<string, unknown>>()
  t.match(without, { deliveryFee: 0, address: null })

  await sleep(5)
  await setOrderStatus(app.database, String(created.id), 'confirmed')
  const confirmed = await get<{ updatedAt: string, date: string, status: string }>(`/external/v1/orders/${String(created.id)}`)
  t.equal(confirmed.status, 'confirmed')
  t.ok(confirmed.updatedAt > confirmed.date, 'a status change moves updatedAt')
})
