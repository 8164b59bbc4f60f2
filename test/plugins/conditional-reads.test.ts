import t from 'tap'
import { matchesTag } from '../../plugins/conditional-reads.ts'
import { authHeaders, buildTestApp, created, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, UNLIMITED } from '../helper.ts'

const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0' } })
const { key } = await makeKey(app)
const mug = makeProduct({ name: 'Tagged Mug', price: 10, quantity: 50 })
await importProducts(app, [mug])
const order = await created(t, await postOrder(app, key, orderBody([line(mug, 1)])))

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ url, headers: { ...authHeaders(key), ...headers } })

const READS = [
  `/external/v1/products/${mug.id}`,
  '/external/v1/products',
  '/external/v1/categories',
  '/external/v1/brands',
  '/external/v1/orders',
  `/external/v1/orders/${order.orderNumber}`,
  '/external/v1/changes?limit=0'
]

t.test('every read answers an ETag, and 304 with no body and the same headers to If-None-Match', async (t) => {
  for (const url of READS) {
    const first = await get(url)
    t.equal(first.statusCode, 200, url)
    const tag = String(first.headers.etag)
    t.match(tag, /^"[A-Za-z0-9_-]{27}"$/, `${url}: a strong tag`)
    t.equal(first.headers['cache-control'], 'private, no-cache', `${url}: private, checked before reuse`)
    const again = await get(url, { 'if-none-match': tag })
    t.equal(again.statusCode, 304, `${url}: not modified`)
    t.equal(again.body, '', `${url}: no body`)
    t.equal(again.headers.etag, tag, `${url}: the same tag`)
    t.equal(again.headers['cache-control'], 'private, no-cache')
    t.ok(again.headers['request-id'], `${url}: a Request-Id`)
    t.ok(again.headers['ratelimit-remaining'] !== undefined, `${url}: the rate-limit headers`)
    t.equal((await get(url, { 'if-none-match': `"other", W/${tag}` })).statusCode, 304, `${url}: a list and the weak form match too`)
    t.equal((await get(url, { 'if-none-match': '"other"' })).statusCode, 200, `${url}: another tag reads the body`)
  }
})

t.test('the tag changes when the resource does', async (t) => {
  const url = `/external/v1/products/${mug.id}`
  const before = String((await get(url)).headers.etag)
  await importProducts(app, [{ ...mug, price: 11 }])
  const after = await get(url, { 'if-none-match': before })
  t.equal(after.statusCode, 200, 'a stale tag reads the new body')
  t.equal(after.json<{ price: number }>().price, 11)
  t.not(after.headers.etag, before)
})

t.test('the tag changes when a discount starts, with no other change', async (t) => {
  const startsAt = new Date(Date.now() + 1500)
  const cup = makeProduct({ name: 'Soon Cheaper Cup', price: 20, discount: { type: 'percentage', value: 50, startsAt: startsAt.toISOString() } })
  await importProducts(app, [cup])
  const url = `/external/v1/products/${cup.id}`
  const before = await get(url)
  t.equal(before.json<{ sellPrice: number }>().sellPrice, 20)
  await sleep(startsAt.getTime() - Date.now() + 50)
  const after = await get(url, { 'if-none-match': String(before.headers.etag) })
  t.equal(after.statusCode, 200)
  t.equal(after.json<{ sellPrice: number }>().sellPrice, 10)
})

t.test('refusals carry no tag; creating an order is never cached', async (t) => {
  const missing = await get(`/external/v1/products/${crypto.randomUUID()}`)
  t.equal(missing.statusCode, 404)
  t.equal(missing.headers.etag, undefined)
  const placed = await postOrder(app, key, orderBody([line(mug, 1)]))
  t.equal(placed.statusCode, 201)
  t.equal(placed.headers.etag, undefined)
  t.equal(placed.headers['cache-control'], 'no-store')
  t.equal((await get('/external/v1/orders/999999999')).headers['cache-control'], 'no-store', 'a refused order read')
})

t.test('If-None-Match forms', async (t) => {
  t.equal(matchesTag(undefined, '"a"'), false)
  t.equal(matchesTag('*', '"a"'), true)
  t.equal(matchesTag(' "b" ,"a"', '"a"'), true)
  t.equal(matchesTag('W/"a"', '"a"'), true)
  t.equal(matchesTag('"ab"', '"a"'), false)
  t.equal(matchesTag('a', '"a"'), false, 'an unquoted value is no tag')
})
