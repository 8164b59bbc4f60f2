// The unfiltered list's pages kept whole (a page a row) are served only while they are the
// very pages the documents give: the same items, entity tags, ids and next sort key. A stock
// change, a price change and an import each take the pages they touch out of service until
// the rebuild builds them again; and while holds on two instances, imports and rebuilds on
// both race, every page served in a snapshot equals the one read from the documents in that
// snapshot.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase, type Database, type Tx } from '../../db/client.ts'
import { readKeptPages, type KeptPage } from '../../db/list-pages.ts'
import { listProducts } from '../../db/products.ts'
import { lockProducts, refreshProducts, writeDocuments } from '../../db/stock.ts'
import { PAGE_SIZE } from '../../schemas/common.ts'
import { rebuildKeptPages } from '../../services/catalog.ts'
import { seedPlainProducts } from '../export.ts'
import { buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, pollState, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const PRODUCTS = 24 * PAGE_SIZE - 10
const PAGES = Math.ceil(PRODUCTS / PAGE_SIZE)
// The apps' own background rebuild stays out of the way: the tests rebuild when they say so.
const ENV = { ...UNLIMITED, LIST_PAGES_REBUILD_MS: '3600000' }

const windowOf = (page: number) => ({ page, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE, after: null })

/** Page `page` as read from the documents, in the kept page's shape. */
async function livePage (db: Tx, page: number) {
  const { items, next } = await listProducts(db, {}, windowOf(page))
  return { items: items.map((i) => i.body).join(','), etags: items.map((i) => i.etag).join(','), ids: items.map((i) => i.id), next }
}

/** What a kept page serves, in the shape livePage gives it. */
const servedShape = (kept: KeptPage) => ({ items: kept.items, etags: kept.etags, ids: kept.ids, next: kept.next })

async function keptPage (db: Tx, page: number) {
  const kept = (await readKeptPages(db, [page], new Date())).get(page)
  return kept === undefined ? null : servedShape(kept)
}

async function buildAll (database: Database): Promise<void> {
  while (await rebuildKeptPages(database, 1000) > 0);
}

/**
 * In one snapshot, every page served as kept is the page the documents give; returns the pages
 * served. All pages are read by one statement, as concurrent requests read them.
 */
async function servedPages (database: Database, pages: number): Promise<{ served: number[], wrong: string[] }> {
  return database.snapshot(async (db) => {
    const served: number[] = []
    const wrong: string[] = []
    const keptPages = await readKeptPages(db, Array.from({ length: pages }, (_, i) => i + 1), new Date())
    for (let page = 1; page <= pages; page++) {
      const found = keptPages.get(page)
      if (found === undefined) continue
      const kept = servedShape(found)
      const live = await livePage(db, page)
      served.push(page)
      if (JSON.stringify(kept) !== JSON.stringify(live)) wrong.push(`page ${page}: kept ${kept.ids.length} items ending ${kept.ids.at(-1)}, live ${live.ids.length} ending ${live.ids.at(-1)}`)
    }
    return { served, wrong }
  })
}

async function expectServed (t: Test, database: Database, when: string, expected: number[], pages = PAGES) {
  const { served, wrong } = await servedPages(database, pages + 1)
  t.same(wrong, [], `${when}: every page served is the page the documents give`)
  t.same(served, expected, `${when}: pages served ${served.length === pages ? 'all' : served.join(', ')}`)
}

const all = (pages = PAGES) => Array.from({ length: pages }, (_, i) => i + 1)

/** The product at a position of the whole list. */
async function productAt (database: Database, position: number): Promise<string> {
  const [row] = await execute<{ id: string }>(database.db, sql`select product_id::text as id from product_list_positions where list = '' and position = ${position}`)
  return row!.id
}

t.test('a kept page is served only while it is the page the documents give', async (t) => {
  const { database } = await createTestDatabase(t)
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  await expectServed(t, database, 'seeded, not yet built', [])
  await buildAll(database)
  await expectServed(t, database, 'built', all())
  const before = await keptPage(database.db, PAGES)
  t.equal(before?.ids.length, PRODUCTS - (PAGES - 1) * PAGE_SIZE, 'the last page holds the last products')
  t.equal(before?.next, null, 'and no next sort key')
  t.equal((await keptPage(database.db, 3))?.next?.[1], await productAt(database, 3 * PAGE_SIZE), 'a page followed by another keeps its last product\'s sort key')

  // A hold changes the stock of products on pages 5 and 9: those two are read from the documents.
  const app = await buildTestApp(t, { database, env: ENV })
  const { key } = await makeKey(app)
  const onFive = await productAt(database, 5 * PAGE_SIZE - 3)
  const onNine = await productAt(database, 8 * PAGE_SIZE + 1)
  const held = await hold(app, key, { items: [{ productId: onNine, quantity: 2 }, { productId: onFive, quantity: 1 }] })
  t.equal(held.statusCode, 201)
  await expectServed(t, database, 'after a hold', all().filter((p) => p !== 5 && p !== 9))
  const stale = await keptPage(database.db, 4)
  await buildAll(database)
  await expectServed(t, database, 'rebuilt after the hold', all())
  t.match((await keptPage(database.db, 5))?.items, /"quantity":999,/, 'page 5 shows the held stock')
  t.same(await keptPage(database.db, 4), stale, 'a page no product of which changed is as it was')
  t.equal((await release(app, key, held.json<Reservation>().id)).statusCode, 204)
  await expectServed(t, database, 'after the release', all().filter((p) => p !== 5 && p !== 9))
  await buildAll(database)

  // An import that adds products ahead of every other moves every page.
  await importProducts(app, Array.from({ length: 30 }, (_, i) => makeProduct({ name: `Aardvark ${i}` })))
  const pages = Math.ceil((PRODUCTS + 30) / PAGE_SIZE)
  await expectServed(t, database, 'after an import', [], pages)
  await buildAll(database)
  await expectServed(t, database, 'rebuilt after the import', all(pages), pages)

  // A discount that ends in a moment: past its end, the page is not served (its sellPrice moved).
  const endsAt = new Date(Date.now() + 1500).toISOString()
  await importProducts(app, [makeProduct({ name: 'Aardvark 0 discounted', price: 10, discount: { type: 'amount', value: 1, endsAt } })])
  await buildAll(database)
  const served = (await servedPages(database, pages + 1)).served
  t.ok(served.includes(1), 'the discounted product\'s page is served before the discount ends')
  await new Promise((resolve) => setTimeout(resolve, 1600))
  await expectServed(t, database, 'past the discount\'s end', all(Math.ceil((PRODUCTS + 31) / PAGE_SIZE)).filter((p) => p !== 1), Math.ceil((PRODUCTS + 31) / PAGE_SIZE))
})

t.test('under marks faster than the rebuild, no page is left out for good', async (t) => {
  const { database } = await createTestDatabase(t)
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  // Every page marked (the renumbering did); then, before each rebuild of two pages, the first
  // three are marked again, as a steady flow of orders on their products would.
  const others = all().filter((p) => p > 3)
  const left = async () => {
    const { served } = await servedPages(database, PAGES)
    return others.filter((p) => !served.includes(p))
  }
  let rebuilds = 0
  while ((await left()).length > 0 && rebuilds < 200) {
    await execute(database.db, sql`insert into product_list_page_changes (list, page) values ('', 1), ('', 2), ('', 3)`)
    await rebuildKeptPages(database, 2)
    rebuilds++
  }
  t.same(await left(), [], `every other page is served, after ${rebuilds} rebuilds of two pages`)
})

t.test('a page answers the same body and ETag whether it was kept or read from the documents', async (t) => {
  const { database } = await createTestDatabase(t)
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  const app = await buildTestApp(t, { database, env: { ...ENV, CATALOG_CACHE_MB: '0' } })
  const { key } = await makeKey(app)
  const read = async (page: number) => {
    const res = await app.inject({ url: `/external/v1/products?page=${page}`, headers: { 'x-api-key': key } })
    return { status: res.statusCode, body: res.body, etag: res.headers.etag }
  }
  const fromDocuments = await Promise.all([1, 7, PAGES, PAGES + 1].map(read))
  await buildAll(database)
  await expectServed(t, database, 'built', all())
  const fromKept = await Promise.all([1, 7, PAGES, PAGES + 1].map(read))
  t.same(fromKept, fromDocuments, 'the same answers')
  t.equal(fromKept[0]!.status, 200)
  const statements = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from product_list_pages where body is not null`)
  t.equal(statements[0]!.n, PAGES, 'every page was kept')
})

t.test('holds on two instances, imports and rebuilds on both at once: every page served is exact', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite is one connection' }, async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 20 })
  const second = await openDatabase({ url: url!, poolSize: 20 })
  t.teardown(() => second.close())
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  await buildAll(database)
  const apps: App[] = [await buildTestApp(t, { database, env: ENV }), await buildTestApp(t, { database: second, env: ENV })]
  const { key } = await makeKey(apps[0]!)
  const ids = (await execute<{ id: string }>(database.db, sql`select product_id::text as id from product_list_positions where list = '' order by position`)).map((r) => r.id)
  const unexpected: string[] = []
  const race = { running: true }
  const integrator = async (i: number) => {
    const app = apps[i % 2]!
    for (let round = 0; round < 8; round++) {
      const a = ids[(i * 37 + round * 101) % ids.length]!
      const b = ids[(i * 53 + round * 29 + 211) % ids.length]!
      const items = (a === b ? [a] : [a, b]).map((productId) => ({ productId, quantity: 1 }))
      const res = await hold(app, key, { items })
      if (res.statusCode !== 201) { unexpected.push(`hold: ${res.statusCode} ${res.body.slice(0, 200)}`); continue }
      const released = await release(app, key, res.json<Reservation>().id)
      if (released.statusCode !== 204) unexpected.push(`release: ${released.statusCode} ${released.body.slice(0, 200)}`)
    }
  }
  const rebuilder = async (db: Database) => {
    while (race.running) {
      await rebuildKeptPages(db, 3)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  const imports = (async () => {
    for (let n = 0; n < 3; n++) {
      await importProducts(apps[n % 2]!, Array.from({ length: 10 }, (_, i) => makeProduct({ name: `Aardvark import ${n} item ${i}` })))
    }
  })()
  const checks = { snapshots: 0, served: 0, wrong: [] as string[] }
  const checker = (async () => {
    while (race.running) {
      const { served, wrong } = await servedPages(database, PAGES + 3)
      checks.snapshots++
      checks.served += served.length
      checks.wrong.push(...wrong)
    }
  })()
  const rebuilders = [rebuilder(database), rebuilder(second)]
  await Promise.all([...Array.from({ length: 16 }, (_, i) => integrator(i)), imports])
  race.running = false
  await Promise.all([...rebuilders, checker])
  t.same(unexpected, [], 'every hold answered 201, every release 204')
  t.same(checks.wrong, [], `${checks.snapshots} snapshots, ${checks.served} pages served: each the page the documents gave`)
  t.ok(checks.served > 0 && checks.snapshots > 3, 'pages were served while the race ran')
  await Promise.all(apps.map((app) => pollState(app)))
  const pages = Math.ceil((PRODUCTS + 30) / PAGE_SIZE)
  await buildAll(database)
  await expectServed(t, database, 'rebuilt after the race', all(pages), pages)
  const [marks] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from product_list_page_changes`)
  t.equal(marks!.n, 0, 'no mark is left behind')
})

t.test('a document written while a renumbering runs marks the page its product is on once the renumbering commits', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite is one connection' }, async (t) => {
  const { database } = await createTestDatabase(t, { poolSize: 10 })
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  await buildAll(database)
  const app = await buildTestApp(t, { database, env: ENV })
  const product = await productAt(database, 5 * PAGE_SIZE - 3)
  // A stock write stays open after writing the product's document (its mark placed by the
  // positions it saw); meanwhile an import adds products ahead of all, which moves the product
  // to another page, and the pages are rebuilt.
  let commit!: () => void
  const committed = new Promise<void>((resolve) => { commit = resolve })
  let written!: () => void
  const wrote = new Promise<void>((resolve) => { written = resolve })
  const write = database.db.transaction(async (tx) => {
    const locks = await lockProducts(tx, [product])
    await execute(tx, sql`update products set quantity = quantity - 7 where id = ${product}`)
    await writeDocuments(tx, locks, await refreshProducts(tx, locks, [product], new Date()))
    written()
    await committed
  })
  await wrote
  const imported = importProducts(app, Array.from({ length: 30 }, (_, i) => makeProduct({ name: `Aardvark ${i}` })))
  await new Promise((resolve) => setTimeout(resolve, 300))
  const rebuilt = buildAll(database)
  await new Promise((resolve) => setTimeout(resolve, 300))
  commit()
  await Promise.all([write, imported, rebuilt])
  await buildAll(database)
  const pages = Math.ceil((PRODUCTS + 30) / PAGE_SIZE)
  await expectServed(t, database, 'after the write, the import and the rebuilds', all(pages), pages)
  t.match((await keptPage(database.db, Math.ceil((5 * PAGE_SIZE - 3 + 30) / PAGE_SIZE)))?.items, /"quantity":993,/, 'the product\'s new page shows its new stock')
})
