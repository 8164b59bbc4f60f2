// GET /products/export and GET /orders/export through app.inject: every line is byte for byte
// what GET answers for that record, in the list's order and with the list's filters; the
// closing line and the Changes-Cursor header; the parameters refused; the documents rendered
// again when their price changed; the key's own orders only (a test key's test orders); gzip;
// one request against the rate limit. (The stream itself, over sockets: export-stream.test.ts;
// the snapshot joined to the feed under load: test/services/export-snapshot.test.ts.)
import { gunzipSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute } from '../../db/client.ts'
import { declareOrderRows, fetchRows } from '../../db/export.ts'
import { writeSetting } from '../../db/settings.ts'
import { demoCatalog } from '../../services/demo-catalog.ts'
import { publishChanges } from '../../services/changes.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { parseExport } from '../export.ts'
import {
  authHeaders, buildTestApp, expectError, importProducts, line, makeKey, makeProduct, orderBody, pollState, postOrder, UNLIMITED, type OrderSummary
} from '../helper.ts'

const app = await buildTestApp(t, { env: { ...UNLIMITED, DISCOUNT_SWEEP_MS: '60000' } })
const catalogue = demoCatalog()
await importCatalog(app.database, catalogue)
await pollState(app)
const { key } = await makeKey(app)

async function exportOf (url: string, apiKey = key, headers: Record<string, string> = {}) {
  const res = await app.inject({ url, headers: { ...authHeaders(apiKey), ...headers } })
  t.equal(res.statusCode, 200, `${url} answers 200`, { body: res.body.slice(0, 500) })
  return { res, ...parseExport(res.body) }
}

/** Every item of a list, following its cursors, as the raw JSON of each. */
async function crawl (app: App, list: string, apiKey = key): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = []
  let url = list
  for (;;) {
    const res = await app.inject({ url, headers: authHeaders(apiKey) })
    const page = res.json<{ items: Array<Record<string, unknown>>, nextCursor: string | null }>()
    items.push(...page.items)
    if (page.nextCursor === null) return items
    url = `${list.split('?')[0]!}?cursor=${encodeURIComponent(page.nextCursor)}`
  }
}

t.test('the catalogue: each line is GET product\'s body, in the list\'s order, then the closing line', async (t) => {
  const { res, lines, records, end } = await exportOf('/external/v1/products/export')
  t.equal(res.headers['content-type'], 'application/x-ndjson')
  t.equal(res.headers['cache-control'], 'no-store')
  t.notOk('etag' in res.headers, 'no ETag')
  t.same(records.map((r) => r.id), (await crawl(app, '/external/v1/products')).map((p) => p.id), 'the list\'s records, in its order')
  t.equal(records.length, catalogue.products!.length, 'every product')
  for (const [i, exported] of lines.entries()) {
    const got = await app.inject({ url: `/external/v1/products/${records[i]!.id as string}`, headers: authHeaders(key) })
    if (got.body !== exported) t.fail(`line ${i + 1} is not GET's body`, { exported, got: got.body })
  }
  t.pass('every line is byte for byte what GET product answers')
  t.same(end, { count: records.length, changesCursor: res.headers['changes-cursor'] }, 'the closing line: the count, and the cursor the header carries')
  t.match(res.headers['changes-cursor'], /^evt_\d+$/)
  const again = await app.inject({ url: '/external/v1/products/export', headers: { ...authHeaders(key), 'if-none-match': '*' } })
  t.equal(again.statusCode, 200, 'If-None-Match does not apply: no 304')
  for (let i = 0; i < 3; i++) {
    const head = await app.inject({ method: 'HEAD', url: '/external/v1/products/export', headers: authHeaders(key) })
    t.match(head, { statusCode: 200, body: '', headers: { 'content-type': 'application/x-ndjson', 'changes-cursor': /^evt_\d+$/ } }, 'HEAD: the headers, no body')
  }
  t.equal((await app.inject({ url: '/external/v1/products/export', headers: authHeaders(key) })).statusCode, 200, 'and it holds none of the key\'s two slots')
})

t.test('the list\'s filters select the same records as the list', async (t) => {
  const [category] = catalogue.categories!
  const [brand, otherBrand] = catalogue.brands!
  const withCombination = catalogue.products!.find((p) => p.combinations?.some((c) => c.sku))!
  const withBarcode = catalogue.products!.find((p) => p.barcode)!
  const filters = [
    `categoryIds=${category!.id}`,
    `brandIds=${brand!.id},${otherBrand!.id}`,
    'isAvailable=true',
    'isAvailable=false',
    'query=an',
    `query=an&brandIds=${brand!.id}`,
    `sku=${encodeURIComponent(withCombination.combinations!.find((c) => c.sku)!.sku!)}`,
    `barcode=${withBarcode.barcode!}`,
    `updatedSince=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`,
    'updatedSince=2999-01-01T00:00:00Z',
    'query=',
    'categoryIds=not-a-guid'
  ]
  for (const filter of filters) {
    const { records, end } = await exportOf(`/external/v1/products/export?${filter}`)
    const listed = await crawl(app, `/external/v1/products?${filter}`)
    t.same(records.map((r) => r.id), listed.map((p) => p.id), `${filter}: ${listed.length} products, as the list`)
    t.equal(end?.count, listed.length)
  }
})

t.test('anything but the list\'s filters, and invalid filters, are refused by name', async (t) => {
  for (const [url, path] of [
    ['/external/v1/products/export?page=2', 'query.page'],
    ['/external/v1/products/export?cursor=abc', 'query.cursor'],
    ['/external/v1/products/export?pageSize=100', 'query.pageSize'],
    ['/external/v1/products/export?isAvailable=true&colour=red', 'query.colour'],
    ['/external/v1/products/export?isAvailable=maybe', 'query.isAvailable'],
    ['/external/v1/products/export?updatedSince=yesterday', 'query.updatedSince'],
    [`/external/v1/products/export?query=${'x'.repeat(201)}`, 'query.query'],
    ['/external/v1/orders/export?page=1', 'query.page'],
    ['/external/v1/orders/export?isAvailable=true', 'query.isAvailable'],
    ['/external/v1/orders/export?updatedSince=2026-13-01T00:00:00Z', 'query.updatedSince']
  ] as const) {
    const res = await app.inject({ url, headers: authHeaders(key) })
    const body = expectError(t, res, 400, 'validation_failed', { details: true, what: url })
    t.equal(body.details?.[0]?.path, path, `${url}: names ${path}`)
    t.equal(res.headers['cache-control'], 'no-store')
  }
})

t.test('scopes: products:list for the catalogue, orders:list for orders', async (t) => {
  const { key: ordersOnly } = await makeKey(app, ['orders:list'])
  const { key: productsOnly } = await makeKey(app, ['products:list'])
  expectError(t, await app.inject({ url: '/external/v1/products/export', headers: authHeaders(ordersOnly) }), 403, 'insufficient_scope')
  expectError(t, await app.inject({ url: '/external/v1/orders/export', headers: authHeaders(productsOnly) }), 403, 'insufficient_scope')
  expectError(t, await app.inject({ url: '/external/v1/products/export' }), 401, 'invalid_api_key')
  await exportOf('/external/v1/products/export', productsOnly)
  await exportOf('/external/v1/orders/export', ordersOnly)
})

t.test('a document past its price change is sent as GET sends it: rendered again at the export, not as stored', async (t) => {
  const startsAt = new Date(Date.now() + 1500)
  const product = makeProduct({ name: 'Zz Boundary Kettle', price: 40, quantity: null, discount: { type: 'percentage', value: 25, startsAt: startsAt.toISOString(), endsAt: null } })
  const missing = makeProduct({ name: 'Zz Documentless Jug', price: 8 })
  // Between them in the list's order, one sent as stored: lines rendered now and lines passed
  // on as stored (on PostgreSQL, the bytes as read) meet in one piece of the answer.
  const fresh = makeProduct({ name: 'Zz Cup As Stored', price: 5 })
  await importProducts(app, [product, missing, fresh])
  // A store upgraded to the read model: a product without a document yet.
  await execute(app.database.db, sql`delete from product_documents where product_id = ${missing.id}`)
  await new Promise((resolve) => setTimeout(resolve, startsAt.getTime() - Date.now() + 50))
  const { records, lines } = await exportOf('/external/v1/products/export?query=zz')
  t.same(records.map((r) => r.name), ['Zz Boundary Kettle', 'Zz Cup As Stored', 'Zz Documentless Jug'])
  t.equal(records[0]!.sellPrice, 30, 'the discount that has started')
  const stored = await execute<{ body: string }>(app.database.db, sql`select body from product_documents where product_id = ${product.id}`)
  t.equal(JSON.parse(stored[0]!.body).sellPrice, 40, 'while the stored document still has the old price (the sweep has not run)')
  for (const [i, id] of [product.id, fresh.id, missing.id].entries()) {
    t.equal(lines[i], (await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(key) })).body, `line ${i + 1} is GET's body`)
  }
})

t.test('orders: the key\'s own, newest first, each GET order\'s body with its items', async (t) => {
  const { key: buyer } = await makeKey(app, undefined, { name: 'buyer' })
  const { key: other } = await makeKey(app, undefined, { name: 'other buyer' })
  const { key: tester } = await makeKey(app, undefined, { name: 'tester', mode: 'test' })
  const [first, second] = catalogue.products!.filter((p) => p.isAvailable && !p.combinations?.length && (p.quantity ?? 100) > 5)
  const place = async (apiKey: string, name: string, lines: ReturnType<typeof line>[]) => {
    const res = await postOrder(app, apiKey, orderBody(lines, { customerName: name }))
    t.equal(res.statusCode, 201, res.body)
    return res.json<OrderSummary>()
  }
  const mine = [
    await place(buyer, 'Ada Lovelace', [line(first!, 1)]),
    await place(buyer, 'Grace Hopper', [line(first!, 2), line(second!, 1)]),
    await place(buyer, 'Ada Byron', [line(second!, 1)])
  ]
  await place(other, 'Someone Else', [line(first!, 1)])
  const tests = [await place(tester, 'Test Ada', [line(first!, 1)]), await place(tester, 'Test Grace', [line(second!, 1)])]
  const changed = await setOrderStatus(app.database, mine[0]!.orderNumber, 'confirmed')
  t.ok(changed.ok)

  const { lines, records, end } = await exportOf('/external/v1/orders/export', buyer)
  t.same(records.map((o) => o.id), [...mine].reverse().map((o) => o.id), 'the key\'s three orders, newest first; no other key\'s, no test order')
  t.same(records.map((o) => o.id), (await crawl(app, '/external/v1/orders', buyer)).map((o) => o.id), 'in the list\'s order')
  for (const [i, exported] of lines.entries()) {
    t.equal(exported, (await app.inject({ url: `/external/v1/orders/${records[i]!.id as string}`, headers: authHeaders(buyer) })).body, `line ${i + 1} is GET order's body`)
  }
  t.equal((records[1]!.items as unknown[]).length, 2, 'with its items')
  t.equal(records[2]!.status, 'confirmed', 'in its current status')
  t.equal(end?.count, 3)

  const testExport = await exportOf('/external/v1/orders/export', tester)
  t.same(testExport.records.map((o) => o.orderNumber), [...tests].reverse().map((o) => o.orderNumber), 'a test key exports its own test orders')
  t.ok(testExport.records.every((o) => o.mode === 'test'))
  t.ok(records.every((o) => o.mode === 'live'), 'a live key, its live orders')

  for (const filter of ['query=ada', `query=${mine[1]!.orderNumber}`, `updatedSince=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`, 'updatedSince=2999-01-01T00:00:00Z']) {
    const filtered = await exportOf(`/external/v1/orders/export?${filter}`, buyer)
    t.same(filtered.records.map((o) => o.id), (await crawl(app, `/external/v1/orders?${filter}`, buyer)).map((o) => o.id), `${filter}: as the list`)
  }
  const none = await exportOf('/external/v1/orders/export', (await makeKey(app)).key)
  t.same(none.records, [], 'a key without orders: no record line')
  t.equal(none.end?.count, 0)
})

t.test('orders: the statement builds each line as GET order prints it, and leaves to the app an order whose bytes it cannot promise', async (t) => {
  const { key: buyer, id: buyerId } = await makeKey(app, undefined, { name: 'tricky buyer' })
  const halves = makeProduct({ name: 'Half "Priced" \\ Mug', price: 12.5 })
  const round = makeProduct({ name: 'Round Mug ☕ Café', price: 10 })
  const cents = makeProduct({ name: 'Cents', price: 0.99 })
  await importProducts(app, [halves, round, cents])
  const variant = catalogue.products!.find((p) => p.isAvailable && (p.combinations?.[0]?.quantity ?? 0) > 2)
  const address = { lineOne: '1 "Quoted" Road\\back', city: 'Zürich 🏔', country: 'CH', phone: '+41445550123', latitude: 47.376887, longitude: 8.541694 }
  const bodies = [
    orderBody([line(halves, 3), line(cents, 2)], { customerName: 'Zoë "Zed" O\'Neil\\', note: 'Ring twice\nthen wait\t(tab) </script> \u2028' }),
    orderBody([line(round, 1)], { customerName: '山田 太郎', address }),
    orderBody([line(round, 2)], { address: { ...address, lineTwo: null, latitude: 0, longitude: -0.000001 } }),
    // JavaScript prints 1e-7 with an exponent, PostgreSQL in full: this one is the app's to render.
    orderBody([line(cents, 1)], { address: { phone: '+41445550123', latitude: 0.0000001, longitude: -179.99999 } }),
    orderBody([line(halves, 1), line(variant!, 1, variant!.combinations![0]!.id)], { address: { city: 'Only a city' } })
  ]
  for (const [i, body] of bodies.entries()) {
    // Not the body as the message: its raw U+2028 would end the line of TAP it is printed in.
    t.equal((await postOrder(app, buyer, body)).statusCode, 201, `order ${i + 1} placed`)
  }
  const idOf = async (condition: ReturnType<typeof sql>) => (await execute<{ id: string }>(app.database.db, sql`select id from orders where api_key_id = ${buyerId} and ${condition}`))[0]!.id
  const tiny = await idOf(sql`address->>'latitude' = '0.0000001'`)
  const full = await idOf(sql`customer_name = '山田 太郎'`)

  const { lines, records, end } = await exportOf('/external/v1/orders/export', buyer)
  t.equal(end?.count, 5)
  for (const [i, exported] of lines.entries()) {
    t.equal(exported, (await app.inject({ url: `/external/v1/orders/${records[i]!.id as string}`, headers: authHeaders(buyer) })).body, `line ${i + 1} is GET order's body`)
  }
  const rendered = await app.database.snapshot(async (tx) => {
    await declareOrderRows(tx, buyerId, {})
    return (await fetchRows(tx, 10)).map((row) => row.renderId)
  })
  t.same(rendered.filter((id) => id !== null), [tiny], 'one left to the app: the coordinate JavaScript prints as 1e-7')
  t.notOk(rendered.includes(full), 'a full address is built by the statement')
})

t.test('the cursor is the feed\'s position as of the export: what changes after it follows it', async (t) => {
  await publishChanges(app.database)
  const before = await exportOf('/external/v1/products/export')
  const cursor = before.end!.changesCursor
  const head = await app.inject({ url: '/external/v1/changes?limit=0', headers: authHeaders(key) })
  t.ok(Number(cursor.slice(4)) >= Number(head.json<{ nextCursor: string }>().nextCursor.slice(4)), 'at least the head the feed shows')
  const product = makeProduct({ name: 'Zz Late Arrival' })
  await importProducts(app, [product])
  await publishChanges(app.database)
  const feed = await app.inject({ url: `/external/v1/changes?after=${cursor}&limit=500`, headers: authHeaders(key) })
  t.equal(feed.statusCode, 200, 'the feed takes the cursor')
  // READ_SETTLE_MS is the feed's own delay: wait it out rather than assume it.
  let events: Array<{ resourceId: string }> = feed.json<{ items: Array<{ resourceId: string }> }>().items
  for (let i = 0; i < 100 && !events.some((e) => e.resourceId === product.id); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    events = (await app.inject({ url: `/external/v1/changes?after=${cursor}&limit=500`, headers: authHeaders(key) })).json<{ items: Array<{ resourceId: string }> }>().items
  }
  t.ok(events.some((e) => e.resourceId === product.id), 'a product created after the export is in the feed after its cursor')
  t.notOk(before.records.some((r) => r.id === product.id), 'and not in the export')
})

t.test('gzip when asked for; identity otherwise', async (t) => {
  const plain = await exportOf('/external/v1/products/export')
  const zipped = await app.inject({ url: '/external/v1/products/export', headers: { ...authHeaders(key), 'accept-encoding': 'br;q=1, GZIP;q=0.5' } })
  t.equal(zipped.statusCode, 200)
  t.equal(zipped.headers['content-encoding'], 'gzip')
  const inflated = gunzipSync(zipped.rawPayload).toString('utf8')
  t.same(parseExport(inflated).lines, plain.lines, 'the same lines, compressed')
  t.ok(zipped.rawPayload.length < inflated.length / 3, `compressed: ${zipped.rawPayload.length} bytes for ${inflated.length}`)
  for (const refused of ['gzip;q=0', 'identity', 'deflate']) {
    const res = await app.inject({ url: '/external/v1/products/export', headers: { ...authHeaders(key), 'accept-encoding': refused } })
    t.equal(res.headers['content-encoding'], undefined, `${refused}: not compressed`)
    t.same(parseExport(res.body).lines, plain.lines)
  }
})

t.test('an export counts as one request against the rate limit, however long', async (t) => {
  const { key: limited } = await makeKey(app, undefined, { rateLimit: 3 })
  const first = await exportOf('/external/v1/products/export', limited)
  t.equal(first.res.headers['ratelimit-remaining'], '2', `one of 3 for ${first.records.length} products`)
  const second = await exportOf('/external/v1/orders/export', limited)
  t.equal(second.res.headers['ratelimit-remaining'], '1')
  await exportOf('/external/v1/products/export', limited)
  const refused = await app.inject({ url: '/external/v1/products/export', headers: authHeaders(limited) })
  expectError(t, refused, 429, 'rate_limit_exceeded')
  t.match(refused.headers['retry-after'], /^\d+$/)
})

t.test('maintenance mode stops orders, not exports', async (t) => {
  await writeSetting(app.database.db, 'maintenance', true)
  await pollState(app)
  t.teardown(async () => {
    await writeSetting(app.database.db, 'maintenance', false)
    await pollState(app)
  })
  const { end } = await exportOf('/external/v1/products/export')
  t.ok(end !== undefined && end.count > 0)
})
