// Hostile input never reaches a 500: NUL characters anywhere, pages beyond any integer,
// over-long query strings and path segments all answer 400 validation_failed naming the
// field, and change nothing.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { authHeaders, buildTestApp, expectError, importProducts, makeKey, makeProduct } from '../helper.ts'

const app = await buildTestApp(t)
const { key } = await makeKey(app)
const product = makeProduct({ quantity: 5 })
await importProducts(app, [product])
const headers = authHeaders(key)

const orderCount = async () => (await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from orders`))[0]!.n

t.test('the six requests that once answered 500', async (t) => {
  const cases: Array<[string, string]> = [
    [`/external/v1/products?page=${'9'.repeat(45)}`, 'query.page'],
    [`/external/v1/orders?page=${'1'.repeat(75)}`, 'query.page'],
    ['/external/v1/orders?page=Infinity', 'query.page'],
    ['/external/v1/orders?query=%00', 'query.query'],
    ['/external/v1/products?barcode=nul%00%00', 'query.barcode']
  ]
  for (const [url, path] of cases) {
    const body = expectError(t, await app.inject({ url, headers }), 400, 'validation_failed', { details: true })
    t.equal(body.details![0]!.path, path, `${url.slice(0, 60)} names ${path}`)
  }
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: product.id }], address: { lineOne: 'Main\u0000\u0000Street' } }
  })
  const body = expectError(t, res, 400, 'validation_failed', { details: true })
  t.same(body.details, [{ path: 'body.address.lineOne', message: 'must not contain the character U+0000' }])
  t.equal(await orderCount(), 0, 'no order was created')
})

t.test('a NUL in any string of a query, a path or a body names the field', async (t) => {
  const cases: Array<[string, string]> = [
    ['/external/v1/products?query=a%00b', 'query.query'],
    ['/external/v1/products?sku=%00', 'query.sku'],
    ['/external/v1/products?unknownParameter=%00', 'query.unknownParameter'],
    ['/external/v1/products/%00', 'path.id'],
    ['/external/v1/orders/100%00', 'path.orderNumberOrId']
  ]
  for (const [url, path] of cases) {
    const body = expectError(t, await app.inject({ url, headers }), 400, 'validation_failed', { details: true })
    t.equal(body.details![0]!.path, path, url)
  }
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: product.id, note: ['x\u0000'] }] }
  })
  t.equal(expectError(t, res, 400, 'validation_failed', { details: true }).details![0]!.path, 'body.items[0].note[0]')
  t.equal(await orderCount(), 0)
})

t.test('a lone surrogate (not Unicode, which jsonb refuses) is refused the same way', async (t) => {
  for (const field of ['lineOne', 'city', 'zipCode']) {
    const res = await app.inject({
      method: 'POST',
      url: '/external/v1/orders',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: product.id }], address: { [field]: 'x\ud800y' } })
    })
    t.same(expectError(t, res, 400, 'validation_failed', { details: true }).details,
      [{ path: `body.address.${field}`, message: 'must be valid Unicode (it holds a lone surrogate)' }], field)
  }
  const emoji = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada 😀', customerPhone: '+14155550123', items: [{ productId: product.id }], address: { city: 'Zürich 🏔' } }
  })
  t.equal(emoji.statusCode, 201, 'a surrogate pair (an emoji) is welcome')
})

t.test('page: an integer from 1 to 2,147,483,647 after "below 1 is 1"', async (t) => {
  for (const page of ['1e400', '2147483648', '1.5', 'abc', '-Infinity', 'NaN']) {
    const body = expectError(t, await app.inject({ url: `/external/v1/products?page=${page}`, headers }), 400, 'validation_failed', { details: true })
    t.equal(body.details!.length, 1, `page=${page}: one detail`)
  }
  const last = await app.inject({ url: '/external/v1/products?page=2147483647', headers })
  t.equal(last.statusCode, 200, 'the largest page answers, empty')
  t.match(last.json(), { items: [], page: 2147483647, total: 1 })
  const orders = await app.inject({ url: '/external/v1/orders?page=2147483647', headers })
  t.match(orders.json(), { items: [], page: 2147483647, total: Number })
  t.match((await app.inject({ url: '/external/v1/products?page=-5', headers })).json(), { page: 1, total: 1 }, 'below 1 is still 1')
})

t.test('every string query parameter has a maximum length', async (t) => {
  const limits: Array<[string, string, number]> = [
    ['/external/v1/products', 'query', 200],
    ['/external/v1/products', 'sku', 200],
    ['/external/v1/products', 'barcode', 200],
    ['/external/v1/products', 'categoryIds', 4000],
    ['/external/v1/products', 'brandIds', 4000],
    ['/external/v1/orders', 'query', 200]
  ]
  for (const [route, name, max] of limits) {
    const fits = await app.inject({ url: `${route}?${name}=${'a'.repeat(max)}`, headers })
    t.equal(fits.statusCode, 200, `${name} of ${max} characters`)
    const body = expectError(t, await app.inject({ url: `${route}?${name}=${'a'.repeat(max + 1)}`, headers }), 400, 'validation_failed', { details: true })
    t.same(body.details, [{ path: `query.${name}`, message: `must be at most ${max} characters long` }], `${name} of ${max + 1}`)
  }
  const sku = await app.inject({ url: `/external/v1/products?sku=${'x'.repeat(15_000)}`, headers })
  expectError(t, sku, 400, 'validation_failed', { details: true })
})

t.test('an over-long path segment is a validation error too', async (t) => {
  const body = expectError(t, await app.inject({ url: `/external/v1/orders/${'1'.repeat(300)}`, headers }), 400, 'validation_failed', { details: true })
  t.same(body.details, [{ path: 'path', message: 'a segment is too long' }])
})

t.test('validation messages that help', async (t) => {
  const available = expectError(t, await app.inject({ url: '/external/v1/products?isAvailable=yes', headers }), 400, 'validation_failed', { details: true })
  t.same(available.details, [{ path: 'query.isAvailable', message: 'must be one of "true", "false"' }], 'an enum names its values, once')
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', customerPhone: '+14155550123', items: [{ productId: product.id }], address: { latitude: 91 } }
  })
  t.same(expectError(t, res, 400, 'validation_failed', { details: true }).details, [{ path: 'body.address.latitude', message: 'must be <= 90' }],
    'a nullable field with a bad value gives one detail')
  const missing = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: { customerName: 'Ada', items: [{ productId: product.id }] }
  })
  expectError(t, missing, 400, 'invalid_phone_number', { message: /^customerPhone is required/ })
})

t.test('updatedSince outside 0001-01-01T00:00:00Z … 9999-12-31T23:59:59Z is validation_failed naming it, never 500', async (t) => {
  const range = 'must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z'
  const outside = ['0000-01-01T00:00:00Z', '0000-12-31T23:59:59Z', '10000-01-01T00:00:00Z', '0001-01-01T00:00:00+01:00', '0001-01-01T00:00:00+01', '9999-12-31T23:59:59-00:01', '9999-12-31T23:59:59.5Z', '+010000-01-01T00:00:00Z']
  for (const route of ['/external/v1/products', '/external/v1/orders']) {
    for (const value of outside) {
      const body = expectError(t, await app.inject({ url: `${route}?updatedSince=${encodeURIComponent(value)}`, headers }), 400, 'validation_failed', { details: true, what: `${route} ${value}` })
      t.same(body.details, [{ path: 'query.updatedSince', message: range }], `${route}: ${value}`)
      t.equal(body.message, `query.updatedSince: ${range}`)
    }
    for (const value of ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00-01:00', '9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z', '9999-12-31T23:59:59+01:00']) {
      const res = await app.inject({ url: `${route}?updatedSince=${encodeURIComponent(value)}`, headers })
      t.equal(res.statusCode, 200, `${route}: ${value} is within the range`)
    }
    // PostgreSQL takes offsets up to ±15:59; RFC 3339 writes up to ±23:59.
    for (const value of ['2026-01-01T00:00:00+16:00', '0001-01-01T23:59:59+23:59', '2026-06-01T12:00:00-20:30']) {
      const body = expectError(t, await app.inject({ url: `${route}?updatedSince=${encodeURIComponent(value)}`, headers }), 400, 'validation_failed', { details: true, what: value })
      t.same(body.details, [{ path: 'query.updatedSince', message: 'must have a UTC offset from -15:59 to +15:59' }], `${route}: ${value}`)
    }
    t.equal((await app.inject({ url: `${route}?updatedSince=${encodeURIComponent('2026-01-01T00:00:00-15:59')}`, headers })).statusCode, 200, 'an offset of 15:59 is taken')
    const notATime = expectError(t, await app.inject({ url: `${route}?updatedSince=yesterday`, headers }), 400, 'validation_failed', { details: true })
    t.same(notATime.details, [{ path: 'query.updatedSince', message: 'must be an ISO 8601 date-time with a UTC offset' }], 'what is no timestamp is told so')
  }
  const first = await app.inject({ url: '/external/v1/products?updatedSince=0001-01-01T00:00:00Z', headers })
  t.equal(first.json<{ total: number }>().total, 1, 'the first instant of the range finds everything')
})

t.test('a list parameter sent several times means its comma-separated form', async (t) => {
  const categories = [{ id: crypto.randomUUID(), name: 'First' }, { id: crypto.randomUUID(), name: 'Second' }]
  const brands = [{ id: crypto.randomUUID(), name: 'Brand one' }, { id: crypto.randomUUID(), name: 'Brand two' }]
  const one = makeProduct({ name: 'Listed one', quantity: 5, categoryIds: [categories[0]!.id], brandId: brands[0]!.id })
  const two = makeProduct({ name: 'Listed two', quantity: 5, categoryIds: [categories[1]!.id], brandId: brands[1]!.id })
  // The file's product stays (orders of other tests refer to it); the two join it.
  await importProducts(app, { categories, brands, products: [product, one, two] })
  t.teardown(() => importProducts(app, [product]))
  const [a, b] = categories.map((c) => c.id)
  const [x, y] = brands.map((c) => c.id)
  const ids = async (query: string) => {
    const res = await app.inject({ url: `/external/v1/products?${query}`, headers })
    t.equal(res.statusCode, 200, query.slice(0, 80))
    return res.json<{ items: Array<{ id: string }> }>().items.map((p) => p.id).sort()
  }
  const both = [one.id, two.id].sort()
  t.same(await ids(`categoryIds=${a},${b}`), both, 'comma-separated')
  t.same(await ids(`categoryIds=${a}&categoryIds=${b}`), both, 'repeated: the same')
  t.same(await ids(`categoryIds=${b}&query=listed&categoryIds=${a}`), both, 'with another filter between the repeats')
  t.same(await ids(`categoryIds=${a}&categoryIds=&categoryIds=not-a-guid`), [one.id], 'blank and invalid values are ignored either way')
  t.same(await ids(`brandIds=${x}&brandIds=${y}`), both, 'brandIds alike')
  t.same(await ids(`brandIds=${x},${y}`), both)

  // The length limit is the joined value's.
  const half = 'a'.repeat(2000)
  t.equal((await app.inject({ url: `/external/v1/products?categoryIds=${half}&categoryIds=${'a'.repeat(1999)}`, headers })).statusCode, 200, '4,000 characters joined')
  const long = expectError(t, await app.inject({ url: `/external/v1/products?categoryIds=${half}&categoryIds=${half}`, headers }), 400, 'validation_failed', { details: true })
  t.same(long.details, [{ path: 'query.categoryIds', message: 'must be at most 4000 characters long' }], '4,001 characters joined')
})

t.test('any other parameter sent twice is refused by name', async (t) => {
  const cases: Array<[string, string]> = [
    ['/external/v1/products?page=1&page=2', 'query.page'],
    ['/external/v1/products?query=a&query=b', 'query.query'],
    ['/external/v1/products?isAvailable=true&isAvailable=true', 'query.isAvailable'],
    ['/external/v1/products?updatedSince=2026-01-01T00:00:00Z&updatedSince=0000-01-01T00:00:00Z', 'query.updatedSince'],
    ['/external/v1/orders?query=1&query=2&query=3', 'query.query'],
    ['/external/v1/categories?page=&page=', 'query.page']
  ]
  for (const [url, path] of cases) {
    const body = expectError(t, await app.inject({ url, headers }), 400, 'validation_failed', { details: true, what: url })
    const times = url.split(`${path.slice('query.'.length)}=`).length - 1
    t.same(body.details, [{ path, message: `must be sent once (it was sent ${times} times)` }], url)
  }
  const two = expectError(t, await app.inject({ url: '/external/v1/products?page=1&page=2&sku=a&sku=b', headers }), 400, 'validation_failed', { details: true })
  t.same(two.details!.map((d) => d.path), ['query.page', 'query.sku'], 'each repeated parameter is named')
  const unknown = await app.inject({ url: '/external/v1/products?tracking=a&tracking=b', headers })
  t.equal(unknown.statusCode, 200, 'a parameter the API does not read is ignored, repeated or not')
})

t.test('a body key that reaches a prototype is refused by name, not called invalid JSON', async (t) => {
  const post = (payload: string) => app.inject({ method: 'POST', url: '/external/v1/orders', headers: { ...headers, 'content-type': 'application/json' }, payload })
  const order = `"customerName":"Ada","customerPhone":"+14155550123","items":[{"productId":"${product.id}"}]`
  const before = await orderCount()
  const proto = expectError(t, await post(`{"__proto__":{"isAdmin":true},${order}}`), 400, 'validation_failed', { details: true })
  t.equal(proto.message, 'body: must not contain a __proto__ key')
  const nested = expectError(t, await post(`{${order},"address":{"constructor":{"prototype":{"x":1}}}}`), 400, 'validation_failed', { details: true })
  t.same(nested.details, [{ path: 'body.address', message: 'must not contain a constructor.prototype key' }])
  t.equal(await orderCount(), before, 'no order was created')
})
