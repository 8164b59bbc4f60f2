// Reads that miss the instance's cache together go to the database together: the products
// (and kept list pages) asked for by concurrent requests are read by one statement, and
// each request still gets exactly its own answer, the one a read on its own gives.
import t from 'tap'
import type { App } from '../../app.ts'
import type { Database } from '../../db/client.ts'
import { PAGE_SIZE } from '../../schemas/common.ts'
import { rebuildKeptPages } from '../../services/catalog.ts'
import { authHeaders, buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, UNLIMITED } from '../helper.ts'

const PRODUCTS = 4 * PAGE_SIZE
// The tests rebuild the kept pages when they say so. A late poll on a loaded machine must not
// make a reader read through the cache, which would read the pages' shared total once each.
const ENV = { ...UNLIMITED, LIST_PAGES_REBUILD_MS: '3600000', READ_SETTLE_MS: '60000' }

const { database } = await createTestDatabase(t)
const setup = await buildTestApp(t, { database, env: ENV })
const { key } = await makeKey(setup, ['products:list', 'products:find'])
const products = Array.from({ length: PRODUCTS }, (_, i) => makeProduct({ name: `Batch ${String(i).padStart(3, '0')}`, quantity: i }))
await importProducts(setup, products)
while (await rebuildKeptPages(database, 1000) > 0);

/** How many catalogue reads reached the database so far (each is one statement's work here). */
const readsOf = (db: Database) => Object.values(db.readStats().reads).reduce((a, b) => a + b, 0)

async function get (app: App, url: string) {
  const res = await app.inject({ url: `/external/v1${url}`, headers: authHeaders(key) })
  // An error's requestId is the request's own; the rest must be the same.
  return { statusCode: res.statusCode, body: res.body.replace(/"requestId":"[^"]*"/, '"requestId":"…"'), etag: res.headers.etag }
}

/** Each URL's answer from an instance of its own, one at a time: what a read alone gives. */
async function alone (urls: string[]) {
  const app = await buildTestApp(t, { database, env: { ...ENV, CATALOG_CACHE_MB: '0' } })
  const answers = []
  for (const url of urls) answers.push(await get(app, url))
  await app.close()
  return answers
}

t.test('products read at once are read by one statement, each answered its own document', async (t) => {
  const app = await buildTestApp(t, { database, env: ENV })
  await app.ready()
  const missing = '00000000-0000-4000-8000-000000000000'
  const urls = [...products.slice(0, 20).map((p) => `/products/${p.id}`), `/products/${missing}`, `/products/${products[3]!.id.toUpperCase()}`]
  const before = readsOf(database)
  const together = await Promise.all(urls.map((url) => get(app, url)))
  t.equal(readsOf(database) - before, 1, `${urls.length} requests, one read`)
  t.strictSame(together, await alone(urls), 'the same status, body and ETag as each read alone')
  t.equal(together[20]!.statusCode, 404, 'a product that does not exist is not found')
  t.equal(together.filter((a) => a.statusCode === 200).length, 21)
})

t.test('no statement reads more than CATALOG_READ_BATCH products', async (t) => {
  const app = await buildTestApp(t, { database, env: { ...ENV, CATALOG_READ_BATCH: '4' } })
  await app.ready()
  const urls = products.slice(20, 30).map((p) => `/products/${p.id}`)
  const before = readsOf(database)
  const together = await Promise.all(urls.map((url) => get(app, url)))
  t.equal(readsOf(database) - before, 3, '10 products, 4 at most a statement: three reads')
  t.strictSame(together, await alone(urls))
})

t.test('kept pages read at once are read by one statement, each answered its own page', async (t) => {
  const app = await buildTestApp(t, { database, env: ENV })
  await app.ready()
  const urls = [1, 2, 3, 4].map((page) => `/products?page=${page}`)
  const before = readsOf(database)
  const together = await Promise.all(urls.map((url) => get(app, url)))
  t.equal(readsOf(database) - before, 2, 'four pages: one read for the pages, one for the total they share')
  t.strictSame(together, await alone(urls))
  t.strictSame(together.map((a) => JSON.parse(a.body).items.length), [PAGE_SIZE, PAGE_SIZE, PAGE_SIZE, PAGE_SIZE])
})
