// Pages by number of the whole list, of one brand and of one category read a range of stored
// positions instead of walking OFFSET rows. They must be the very pages the OFFSET walk gives,
// with the same sort key for the next page's cursor and the same total, after every import
// that adds, renames, moves or removes products.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { importCatalog } from '../../services/catalog-import.ts'
import { execute } from '../../db/client.ts'
import { countMatchingProducts, listProducts, type ProductFilters } from '../../db/products.ts'
import { checkCatalog } from '../../lib/catalog-file.ts'
import type { CatalogFile, CatalogProduct } from '../../schemas/catalog-file.ts'
import { createTestDatabase, makeProduct } from '../helper.ts'

const { database } = await createTestDatabase(t)
const categories = ['Tools', 'Garden', 'Kitchen'].map((name) => ({ id: crypto.randomUUID(), name }))
const brands = ['Acme', 'Globex'].map((name) => ({ id: crypto.randomUUID(), name }))
const LIMIT = 4

function catalogue (count: number, shift: number): CatalogProduct[] {
  return Array.from({ length: count }, (_, i) => makeProduct({
    id: ids[i]!,
    // Names that tie once lower-cased, so the id decides their order.
    name: `${['b', 'A', 'a', 'C'][(i + shift) % 4]!} product ${(i * 7 + shift) % 5}`,
    categoryIds: [categories[(i + shift) % 3]!.id, ...(i % 4 === 0 ? [categories[(i + shift + 1) % 3]!.id] : [])],
    brandId: (i + shift) % 5 === 0 ? null : brands[(i + shift) % 2]!.id
  }))
}
const ids = Array.from({ length: 40 }, () => crypto.randomUUID())

async function importFile (products: CatalogProduct[], replace = false) {
  const file: CatalogFile = { categories, brands, products }
  await importCatalog(database, checkCatalog(structuredClone(file)), { replace })
}

/** Every page of a list, by number, with the sort key its next page's cursor starts after. */
async function pages (filters: ProductFilters) {
  const all: Array<{ ids: string[], next: unknown }> = []
  for (let page = 0; ; page++) {
    const { items, next } = await listProducts(database.db, filters, { page: page + 1, offset: page * LIMIT, limit: LIMIT, after: null })
    if (items.length === 0) return all
    all.push({ ids: items.map((p) => p.id), next })
  }
}

async function expectSamePages (t: Test, when: string) {
  // The same list through the OFFSET walk: two copies of one id select the same products,
  // and no numbered list answers a filter of two ids; nor one of updatedSince.
  const cases: Array<[string, ProductFilters, ProductFilters]> = [
    ['the whole list', {}, { updatedSince: '1970-01-01T00:00:00Z' }],
    ...categories.map((c): [string, ProductFilters, ProductFilters] => [`category ${c.name}`, { categoryIds: [c.id] }, { categoryIds: [c.id, c.id] }]),
    ...brands.map((b): [string, ProductFilters, ProductFilters] => [`brand ${b.name}`, { brandIds: [b.id.toUpperCase()] }, { brandIds: [b.id, b.id] }])
  ]
  for (const [name, numbered, walked] of cases) {
    const expected = await pages(walked)
    t.ok(expected.length > 1, `${when}, ${name}: more than one page`)
    t.same(await pages(numbered), expected, `${when}, ${name}: the same pages, each with the same next sort key`)
    t.equal(await countMatchingProducts(database.db, numbered), await countMatchingProducts(database.db, walked), `${when}, ${name}: the same total`)
  }
}

t.test('pages by number follow every import', async (t) => {
  await importFile(catalogue(30, 0))
  await expectSamePages(t, 'first import')
  const [row] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from product_list_positions where list like 'category:%'`)
  t.equal(row!.n, 30 + 8, 'each category numbers its products (8 products are in two)')

  await importFile(catalogue(40, 1))
  await expectSamePages(t, 'renamed, moved between brands and categories, added')

  await importFile(catalogue(40, 1).slice(5, 33), true)
  await expectSamePages(t, 'with --replace, some removed')
})
