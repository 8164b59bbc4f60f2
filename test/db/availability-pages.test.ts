// Pages by number of `isAvailable` are found by counts of available products per block of the
// whole list's positions, then a walk of at most a block. They must be the very pages the
// OFFSET walk gives, with the same sort key for the next page's cursor and the same total,
// after every stock change that turns a product's availability, after every import, and
// after stock changes on two instances raced an import.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase, type Database, type Tx } from '../../db/client.ts'
import { AVAILABILITY_BLOCK, countMatchingProducts, listProducts, renumberProducts, type ProductFilters } from '../../db/products.ts'
import { seedPlainProducts } from '../export.ts'
import { buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, pollState, tableRowsRead, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const PRODUCTS = 2 * AVAILABILITY_BLOCK + 600
const LIMIT = 25

/** Every page of a list by number, each with the sort key its next page's cursor starts after. */
async function pages (db: Tx, filters: ProductFilters) {
  const all: Array<{ ids: string[], next: unknown }> = []
  for (let page = 0; ; page++) {
    const { items, next } = await listProducts(db, filters, { page: page + 1, offset: page * LIMIT, limit: LIMIT, after: null })
    if (items.length === 0) return all
    all.push({ ids: items.map((p) => p.id), next })
  }
}

/** The blocks' counts as they are stored, and as counted afresh from the positions and the products. */
async function blocks (database: Database) {
  const stored = await execute<{ block: number, available: number, unavailable: number }>(database.db, sql`
    select block, available, unavailable from product_availability_blocks order by block`)
  const counted = await execute<{ block: number, available: number, unavailable: number }>(database.db, sql`
    select (l.position - 1) / ${AVAILABILITY_BLOCK} as block, count(*) filter (where p.available)::int as available, count(*) filter (where not p.available)::int as unavailable
    from product_list_positions l join products p on p.id = l.product_id where l.list = '' group by 1 order by 1`)
  return { stored, counted }
}

async function expectSamePages (t: Test, database: Database, when: string) {
  const { stored, counted } = await blocks(database)
  t.same(stored, counted, `${when}: each block's counts are those of a fresh count`)
  for (const isAvailable of [true, false]) {
    // `updatedSince` at the epoch selects the same products and makes the list walk OFFSET.
    const walked = { isAvailable, updatedSince: '1970-01-01T00:00:00Z' }
    const [expected, found, total, walkedTotal] = await Promise.all([
      pages(database.db, walked), pages(database.db, { isAvailable }),
      countMatchingProducts(database.db, { isAvailable }), countMatchingProducts(database.db, walked)
    ])
    t.same(found, expected, `${when}, isAvailable=${isAvailable}: the same ${expected.length} pages, each with the same next sort key`)
    t.equal(total, walkedTotal, `${when}, isAvailable=${isAvailable}: the same total (${walkedTotal})`)
  }
}

/** Products with one unit left, spread over every block: a hold of one turns it unavailable, its release back. */
async function scarce (database: Database, every: number): Promise<string[]> {
  const rows = await execute<{ id: string }>(database.db, sql`
    update products p set quantity = 1 from product_list_positions l
    where l.list = '' and l.product_id = p.id and l.position % ${every} = 1 returning p.id::text as id`)
  return rows.map((r) => r.id)
}

t.test('pages of isAvailable follow stock changes and imports', async (t) => {
  const { database } = await createTestDatabase(t)
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  // Some products unavailable from the start, unevenly over the blocks.
  await execute(database.db, sql`update products p set quantity = 0, available = false from product_list_positions l
    where l.list = '' and l.product_id = p.id and (l.position % 7 = 0 or l.position between 1500 and 1620)`)
  await database.db.transaction((tx) => renumberProducts(tx))
  await expectSamePages(t, database, 'seeded')
  t.same((await listProducts(database.db, { isAvailable: true }, { page: 1000, offset: 999 * LIMIT, limit: LIMIT, after: null })).items, [], 'a page past the last is empty')
  await database.db.transaction(async (tx) => {
    // Plain index scans fetch every row they pass (an index-only scan may skip the fetch), so
    // the rows fetched count the index entries walked.
    await execute(tx, sql`set local enable_indexonlyscan = off`)
    const available = await countMatchingProducts(tx, { isAvailable: true, updatedSince: '1970-01-01T00:00:00Z' })
    const lastPage = Math.ceil(available / LIMIT)
    t.ok(available > 2 * AVAILABILITY_BLOCK, `${available} available products, over three blocks`)
    const before = await tableRowsRead(tx, 'products')
    const last = await listProducts(tx, { isAvailable: true }, { page: lastPage, offset: (lastPage - 1) * LIMIT, limit: LIMIT, after: null })
    t.equal(last.items.length, available - (lastPage - 1) * LIMIT, `the last page of ${available} available products`)
    const read = await tableRowsRead(tx, 'products') - before
    t.ok(read <= AVAILABILITY_BLOCK + LIMIT + 2, `its page read ${read} product rows: at most one block's and the page's, not the ${(lastPage - 1) * LIMIT} before it`)
  })

  const app = await buildTestApp(t, { database, env: UNLIMITED })
  const { key } = await makeKey(app)
  const ids = await scarce(database, 97)
  const holds: Reservation[] = []
  for (let i = 0; i < ids.length; i += 3) {
    const res = await hold(app, key, { items: ids.slice(i, i + 3).map((productId) => ({ productId, quantity: 1 })) })
    t.equal(res.statusCode, 201, `hold ${i / 3 + 1}`)
    holds.push(res.json<Reservation>())
  }
  await expectSamePages(t, database, `${ids.length} products held to their last unit, over every block`)
  for (const held of holds.filter((_, i) => i % 2 === 0)) t.equal((await release(app, key, held.id)).statusCode, 204)
  await expectSamePages(t, database, 'half of the holds released')

  // An import that adds products moves every later position: the blocks are counted again.
  await importProducts(app, Array.from({ length: 40 }, (_, i) => makeProduct({ name: `Aardvark ${i}`, quantity: i % 2 })))
  await expectSamePages(t, database, 'after an import added 40 products at the front, half of them without stock')
  for (const held of holds.filter((_, i) => i % 2 === 1)) t.equal((await release(app, key, held.id)).statusCode, 204)
  await expectSamePages(t, database, 'every hold released after the import')
})

t.test('a page of isAvailable is read with its generic plan, not planned again each call', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  const { database, url } = await createTestDatabase(t)
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  // One connection: the statements it prepared are the session's own (pg_prepared_statements).
  const single = await openDatabase({ url: url!, poolSize: 1 })
  t.teardown(() => single.close())
  for (let page = 1; page <= 12; page++) {
    t.equal((await listProducts(single.db, { isAvailable: true }, { page, offset: (page - 1) * 150, limit: LIMIT, after: null })).items.length, LIMIT)
  }
  const [plans] = await execute<{ generic: number, custom: number }>(single.db, sql`select generic_plans::int as generic, custom_plans::int as custom
    from pg_prepared_statements where statement like 'with counted as (%'`)
  // The plan cache tries custom plans 5 times before it judges the generic one.
  t.ok(plans !== undefined && plans.custom <= 5 && plans.generic >= 7, `${plans?.generic} generic plans, ${plans?.custom} custom`)
})

t.test('holds and releases on two instances, racing imports, leave every block counted exactly', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite is one connection' }, async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 20 })
  const second = await openDatabase({ url: url!, poolSize: 20 })
  t.teardown(() => second.close())
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  const apps: App[] = [await buildTestApp(t, { database, env: UNLIMITED }), await buildTestApp(t, { database: second, env: UNLIMITED })]
  const { key } = await makeKey(apps[0]!)
  const ids = await scarce(database, 53)
  const unexpected: string[] = []
  let granted = 0
  // Each integrator holds two products of different blocks, in either order, then releases them.
  const integrator = async (i: number) => {
    const app = apps[i % 2]!
    for (let round = 0; round < 6; round++) {
      const a = ids[(i * 7 + round * 13) % ids.length]!
      const b = ids[(i * 11 + round * 5 + 17) % ids.length]!
      const items = (i % 2 === 0 ? [a, b] : [b, a]).filter((id, k, all) => all.indexOf(id) === k).map((productId) => ({ productId, quantity: 1 }))
      const res = await hold(app, key, { items })
      if (res.statusCode === 201) {
        granted++
        const released = await release(app, key, res.json<Reservation>().id)
        if (released.statusCode !== 204) unexpected.push(`release: ${released.statusCode} ${released.body.slice(0, 200)}`)
      } else if (res.statusCode !== 400) {
        unexpected.push(`hold: ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
    }
  }
  // Each import adds products ahead of every seeded one, so every position after them moves.
  const imports = (async () => {
    for (let n = 0; n < 3; n++) {
      await importProducts(apps[n % 2]!, Array.from({ length: 10 }, (_, i) => makeProduct({ name: `Aardvark import ${n} item ${i}`, quantity: (i + n) % 2 })))
    }
  })()
  await Promise.all([...Array.from({ length: 24 }, (_, i) => integrator(i)), imports])
  t.same(unexpected, [], 'every hold answered 201 or a refusal, every release 204')
  t.ok(granted > 24, `${granted} holds granted`)
  await Promise.all(apps.map((app) => pollState(app)))
  await expectSamePages(t, database, 'after the race')
  // And with some held at the end: half the scarce products held on the second instance.
  for (let i = 0; i < ids.length; i += 2) t.equal((await hold(apps[1]!, key, { items: [{ productId: ids[i]!, quantity: 1 }] })).statusCode, 201)
  await expectSamePages(t, database, 'half the scarce products held')
})
