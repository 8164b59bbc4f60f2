import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { authHeaders, buildTestApp, created, expectError, importProducts, line, makeKey, makeProduct, orderBody, postOrder, UNLIMITED } from '../helper.ts'

interface Page<T = { id: string, name: string }> { items: T[], page: number, pageSize: number, total: number, nextCursor: string | null }

const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0' } })
const { key } = await makeKey(app)
const { key: otherKey } = await makeKey(app, undefined, { name: 'another integrator' })

async function page<T = { id: string, name: string }> (url: string, withKey = key): Promise<Page<T>> {
  const res = await app.inject({ url, headers: authHeaders(withKey) })
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`)
  return res.json<Page<T>>()
}

/** Follows nextCursor from the first page to the end; `between` runs after each page. */
async function crawl<T extends { id: string } = { id: string, name: string }> (first: string, between: (pageNumber: number) => Promise<void> = async () => {}, withKey = key) {
  const pages: Array<Page<T>> = []
  let current = await page<T>(first, withKey)
  for (;;) {
    pages.push(current)
    await between(current.page)
    if (current.nextCursor === null) return pages
    const base = first.split('?')[0]!
    current = await page<T>(`${base}?cursor=${encodeURIComponent(current.nextCursor)}`, withKey)
  }
}

const names = Array.from({ length: 60 }, (_, i) => `Crawl ${String(i).padStart(3, '0')}`)
const catalogue = names.map((name, i) => makeProduct({ name, quantity: i % 3 === 0 ? 0 : 5 }))
const lamp = makeProduct({ name: 'Untracked Lamp', quantity: null })
await importProducts(app, [...catalogue, lamp])

t.test('following cursors reads every product once, in order, with page numbers', async (t) => {
  const pages = await crawl('/external/v1/products?query=crawl')
  t.same(pages.map((p) => p.page), [1, 2, 3])
  t.same(pages.map((p) => p.items.length), [25, 25, 10])
  t.same(pages.flatMap((p) => p.items.map((i) => i.name)), names)
  t.ok(pages.every((p) => p.total === 60), 'the total on every page')
  t.equal(pages.at(-1)!.nextCursor, null, 'null when no record follows')
  const byNumber = await page('/external/v1/products?query=crawl&page=2')
  t.same(byNumber.items.map((i) => i.name), pages[1]!.items.map((i) => i.name), 'page 2 by number is page 2 by cursor')
  t.type(byNumber.nextCursor, 'string', 'a numbered page has a cursor to the next one')
  t.same((await page(`/external/v1/products?cursor=${encodeURIComponent(byNumber.nextCursor!)}`)).items.map((i) => i.name), names.slice(50))
  t.ok(pages.every((p) => (p.nextCursor ?? '').length <= 1000), 'at most 1,000 characters')
})

t.test('the cursor carries the filters', async (t) => {
  const pages = await crawl('/external/v1/products?query=crawl&isAvailable=true')
  const available = catalogue.filter((p) => p.quantity !== 0).map((p) => p.name)
  t.same(pages.flatMap((p) => p.items.map((i) => i.name)), available)
  t.ok(pages.every((p) => p.total === available.length))
})

t.test('a cursor crawl is stable while the catalogue changes', async (t) => {
  const seen: string[] = []
  const added: string[] = []
  const pages = await crawl<{ id: string, name: string }>('/external/v1/products?query=crawl', async (n) => {
    if (n !== 1) return
    // Products sorting before and after the crawl's position arrive, and one already seen is renamed to sort last.
    const newcomers = [makeProduct({ name: 'Crawl 000a' }), makeProduct({ name: 'Crawl 999' })]
    added.push(...newcomers.map((p) => p.name))
    await importProducts(app, newcomers)
  })
  seen.push(...pages.flatMap((p) => p.items.map((i) => i.name)))
  t.equal(new Set(seen).size, seen.length, 'no product twice')
  for (const name of names) t.ok(seen.includes(name), `${name} read once`)
  t.ok(seen.includes('Crawl 999'), 'a product added ahead of the crawl is read')
  t.notOk(seen.includes('Crawl 000a'), 'one added behind it is not (it did not exist when that page was read)')
  t.equal(pages.at(-1)!.total, 62, 'the current total')
})

t.test('cursors refuse other parameters, tampering and other lists', async (t) => {
  const first = await page('/external/v1/products?query=crawl')
  const cursor = encodeURIComponent(first.nextCursor!)
  const get = (url: string, withKey = key) => app.inject({ url, headers: authHeaders(withKey) })
  for (const other of ['page=2', 'query=x', 'isAvailable=true', 'updatedSince=2026-01-01T00:00:00Z', 'sku=a']) {
    expectError(t, await get(`/external/v1/products?cursor=${cursor}&${other}`), 400, 'validation_failed', { details: true, what: other })
  }
  const tampered = first.nextCursor!.replace(/^./, (c) => (c === 'e' ? 'f' : 'e'))
  for (const bad of ['garbage', 'a.b', tampered, `${first.nextCursor!}x`]) {
    expectError(t, await get(`/external/v1/products?cursor=${encodeURIComponent(bad)}`), 400, 'invalid_cursor', { what: bad.slice(0, 12) })
  }
  // A cursor of another list names the list it belongs to.
  expectError(t, await get(`/external/v1/categories?cursor=${cursor}`), 400, 'invalid_cursor',
    { what: 'a products cursor on categories', message: /^This cursor belongs to the products list, not the categories list$/ })
  expectError(t, await get(`/external/v1/orders?cursor=${cursor}`), 400, 'invalid_cursor',
    { what: 'a products cursor on orders', message: /^This cursor belongs to the products list, not the orders list$/ })
  expectError(t, await get(`/external/v1/products?cursor=${encodeURIComponent(tampered)}`), 400, 'invalid_cursor',
    { what: 'an altered cursor', message: /^The cursor was not issued by this service or was altered$/ })
  expectError(t, await get(`/external/v1/products?cursor=${'x'.repeat(1001)}`), 400, 'validation_failed', { details: true })
})

t.test('orders: cursors newest first, bound to the key', async (t) => {
  const placed: string[] = []
  for (let i = 0; i < 30; i++) placed.push((await created(t, await postOrder(app, key, orderBody([line(lamp, 1)], { customerName: 'Crawler' })))).id)
  const pages = await crawl('/external/v1/orders?query=crawler')
  t.same(pages.flatMap((p) => p.items.map((i) => i.id)), placed.reverse())
  t.same(pages.map((p) => p.page), [1, 2])
  expectError(t, await app.inject({ url: `/external/v1/orders?cursor=${encodeURIComponent(pages[0]!.nextCursor!)}`, headers: authHeaders(otherKey) }),
    400, 'invalid_cursor', { what: 'another key\'s cursor', message: /^The cursor was not issued by this service or was altered$/ })
  const orders = encodeURIComponent(pages[0]!.nextCursor!)
  expectError(t, await app.inject({ url: `/external/v1/products?cursor=${orders}`, headers: authHeaders(key) }), 400, 'invalid_cursor',
    { what: 'an orders cursor on products', message: /^This cursor belongs to the orders list, not the products list$/ })
})

t.test('orders created within one millisecond keep their order across pages', async (t) => {
  const { key: tied, id: tiedId } = await makeKey(app, undefined, { name: 'tied' })
  for (let i = 0; i < 27; i++) await created(t, await postOrder(app, tied, orderBody([line(lamp, 1)])))
  // Microseconds apart, as a bulk load could make them: the cursor must not round them off.
  await execute(app.database.db, sql`update orders set created_at = '2026-11-23T10:00:00Z'::timestamptz + (random() * interval '900 microseconds') where api_key_id = ${tiedId}`)
  const byCursor = (await crawl('/external/v1/orders', undefined, tied)).flatMap((p) => p.items.map((i) => i.id))
  const byNumber = [...(await page('/external/v1/orders?page=1', tied)).items, ...(await page('/external/v1/orders?page=2', tied)).items].map((i) => i.id)
  t.equal(new Set(byCursor).size, 27)
  t.same(byCursor, byNumber)
})

t.test('categories and brands page by cursor too', async (t) => {
  const ids = Array.from({ length: 30 }, () => crypto.randomUUID())
  await importProducts(app, {
    categories: ids.map((id, i) => ({ id, name: `Shelf ${String(i).padStart(2, '0')}` })),
    products: [makeProduct({ categoryIds: ids })]
  })
  const pages = await crawl<{ id: string, name: string }>('/external/v1/categories')
  const shelves = pages.flatMap((p) => p.items.map((i) => i.name)).filter((n) => n.startsWith('Shelf'))
  t.equal(shelves.length, 30)
  t.same(shelves, [...shelves].sort())
  t.ok(pages.length >= 2)
})

t.test('updatedSince: only what changed at or after the instant', async (t) => {
  const [first, second] = catalogue.filter((p) => p.quantity !== 0)
  const since = new Date(Date.now() + 5).toISOString()
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.same((await page(`/external/v1/products?query=crawl&updatedSince=${since}`)).items, [], 'nothing yet')
  await importProducts(app, [{ ...first!, price: 99 }])
  const order = await created(t, await postOrder(app, key, orderBody([line(second!, 1)], { customerName: 'Since' })))
  const changed = await page(`/external/v1/products?updatedSince=${encodeURIComponent(since)}`)
  t.same(changed.items.map((i) => i.id).sort(), [first!.id, second!.id].sort(), 'the changed product and the one whose stock was taken')
  t.equal(changed.total, 2)
  const orderSince = new Date().toISOString()
  await new Promise((resolve) => setTimeout(resolve, 5))
  t.same((await page(`/external/v1/orders?updatedSince=${orderSince}`)).items, [])
  await setOrderStatus(app.database, order.orderNumber, 'confirmed')
  const orders = await page<{ id: string, status: string }>(`/external/v1/orders?updatedSince=${orderSince}`)
  t.same(orders.items.map((i) => [i.id, i.status]), [[order.id, 'confirmed']])
  t.equal(orders.total, 1)
  t.equal((await page(`/external/v1/orders?updatedSince=${encodeURIComponent('2026-01-01T00:00:00+02:00')}&query=since`)).total, 1, 'any offset')
  for (const bad of ['yesterday', '2026-11-23', '2026-11-23T10:00:00', '2026-13-01T00:00:00Z']) {
    for (const list of ['products', 'orders']) {
      expectError(t, await app.inject({ url: `/external/v1/${list}?updatedSince=${encodeURIComponent(bad)}`, headers: authHeaders(key) }),
        400, 'validation_failed', { details: true, what: `${list} ${bad}` })
    }
  }
})

t.test('an unfiltered page by number is the same as walking the list in order', async (t) => {
  const all: string[] = []
  for (let n = 1; ; n++) {
    const current = await page(`/external/v1/products?page=${n}`)
    all.push(...current.items.map((i) => i.id))
    if (current.items.length < 25) break
  }
  const expected = (await execute<{ id: string }>(app.database.db, sql`select id from products order by lower(name), id`)).map((r) => r.id)
  t.same(all, expected, 'every page in the list\'s order, none skipped or repeated')
  const last = Math.ceil(expected.length / 25)
  t.same((await page(`/external/v1/products?page=${last + 1}`)).items, [], 'past the end')
})
