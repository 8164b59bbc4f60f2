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
