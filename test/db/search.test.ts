// Search pages and totals must be exactly what a plain scan of the catalogue tables finds: by
// name, SKU or barcode of a product or of its combinations, combined with every other filter,
// by page number and by cursor, after imports that rename, re-code and remove products, and
// after stock changes that change availability. The first pages of pieces many products share
// come from their search heads, which must equal a fresh count and ordering of the matches
// after every change.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { execute } from '../../db/client.ts'
import { countMatchingProducts } from '../../db/products.ts'
import { lockProducts, refreshProducts, writeDocuments } from '../../db/stock.ts'
import { findSearchMatches } from '../../db/search.ts'
import type { ProductFilters } from '../../db/product-filters.ts'
import { checkCatalog } from '../../lib/catalog-file.ts'
import type { ListWindow, SortKey } from '../../schemas/common.ts'
import type { CatalogFile, CatalogProduct } from '../../schemas/catalog-file.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { createTestDatabase, makeProduct, readingRows } from '../helper.ts'

const { database } = await createTestDatabase(t)
const db = database.db
const LIMIT = 3
const categories = ['Tools', 'Garden'].map((name) => ({ id: crypto.randomUUID(), name }))
const brands = ['Acme', 'Globex'].map((name) => ({ id: crypto.randomUUID(), name }))
const ids = Array.from({ length: 30 }, () => crypto.randomUUID())
const WORDS = ['Walnut Bowl', 'walnut board', 'Oak Bowl', 'Steel Kettle', 'Bucket', 'Jacket', 'Rocket Lamp']

function catalogue (count: number, shift: number): CatalogProduct[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + shift
    return makeProduct({
      id: ids[i]!,
      name: `${WORDS[n % WORDS.length]!} ${n % 3}`,
      sku: `SKU-${n % 4}-${i}`,
      barcode: i % 5 === 0 ? null : `59${String(n * 7919).padStart(11, '0')}`,
      quantity: n % 6 === 0 ? 0 : 5,
      categoryIds: [categories[n % 2]!.id],
      brandId: n % 3 === 0 ? null : brands[n % 2]!.id,
      ...(i % 4 === 1
        ? {
            variants: [{ id: crypto.randomUUID(), name: 'Size', options: [{ id: `${ids[i]!.slice(0, 30)}aaaa00`, name: 'S' }] }],
            combinations: [{
              id: `${ids[i]!.slice(0, 30)}bbbb00`,
              optionIds: [`${ids[i]!.slice(0, 30)}aaaa00`],
              sku: `COMBO-${WORDS[(n + 1) % WORDS.length]!.split(' ')[0]!}-${i}`,
              barcode: `77${String(i).padStart(11, '0')}`,
              quantity: n % 2,
              price: 3,
              isAvailable: true
            }]
          }
        : {})
    })
  })
}

async function importFile (products: CatalogProduct[], replace = false) {
  const file: CatalogFile = { categories, brands, products }
  await importCatalog(database, checkCatalog(structuredClone(file)), { replace })
}

/** The matches as a plain scan of the catalogue tables finds them, in the list's order. */
async function scan (query: string, filters: Omit<ProductFilters, 'query'>): Promise<Array<{ id: string, sort_name: string }>> {
  const q = query.toLowerCase()
  const has = (column: string) => sql.raw(`strpos(lower(coalesce(${column}, '')), `)
  const rows = await execute<{ id: string, sort_name: string, available: boolean, brand_id: string | null, categories: string[], skus: string[], barcodes: string[], updated_at: string }>(db, sql`
    select p.id, lower(p.name) as sort_name, p.available, p.brand_id, p.updated_at::text as updated_at,
      to_json(array(select category_id::text from product_categories where product_id = p.id)) as categories,
      to_json(array(select sku from combinations where product_id = p.id and sku is not null) || array[p.sku]) as skus,
      to_json(array(select barcode from combinations where product_id = p.id and barcode is not null) || array[p.barcode]) as barcodes
    from products p
    where ${has('p.name')}${q}) > 0 or ${has('p.sku')}${q}) > 0 or ${has('p.barcode')}${q}) > 0
      or exists (select 1 from combinations c where c.product_id = p.id and (${has('c.sku')}${q}) > 0 or ${has('c.barcode')}${q}) > 0))
    order by lower(p.name), p.id`)
  return rows.filter((r) =>
    (filters.isAvailable === undefined || r.available === filters.isAvailable) &&
    (filters.categoryIds === undefined || r.categories.some((c) => filters.categoryIds!.includes(c))) &&
    (filters.brandIds === undefined || (r.brand_id !== null && filters.brandIds.includes(r.brand_id))) &&
    (filters.sku === undefined || r.skus.includes(filters.sku)) &&
    (filters.barcode === undefined || r.barcodes.includes(filters.barcode)) &&
    (filters.updatedSince === undefined || new Date(r.updated_at) >= new Date(filters.updatedSince)))
}

const byNumber = (page: number): ListWindow => ({ page, limit: LIMIT, offset: (page - 1) * LIMIT, after: null })
const byCursor = (page: number, after: SortKey): ListWindow => ({ page, limit: LIMIT, offset: 0, after })

/** Each search head against the matches counted and ordered afresh: the pieces that differ. */
async function staleHeads (): Promise<string[]> {
  const rows = await execute<{ piece: string }>(db, sql`
    select h.piece from search_heads h cross join lateral (
      select count(*)::int as products, coalesce((array_agg(s.product_id order by s.sort_name, s.product_id))[1:26], '{}') as head,
        coalesce((array_agg(s.sort_name order by s.sort_name, s.product_id))[1:26], '{}') as sort_names
      from product_search s where strpos(s.search_text, h.piece) > 0) as fresh
    where (h.products, h.head, h.head_sort_names) is distinct from (fresh.products, fresh.head, fresh.sort_names)`)
  return rows.map((r) => r.piece)
}

async function headCount (): Promise<number> {
  return (await execute<{ n: number }>(db, sql`select count(*)::int as n from search_heads where products > 0`))[0]!.n
}

async function expectExact (t: Test, when: string) {
  t.same(await staleHeads(), [], `${when}: every search head equals its matches`)
  const queries = ['walnut', 'WAL', 'bowl', 'ket', 'lnut', 'ocket', 'et', 'combo-oak', 'sku-1', '59', '770000', 'nothing here', '%', '_']
  const filterSets: Array<Omit<ProductFilters, 'query'>> = [
    {},
    { isAvailable: true },
    { isAvailable: false },
    { categoryIds: [categories[0]!.id] },
    { brandIds: [brands[1]!.id, brands[0]!.id] },
    { sku: 'SKU-1-5' },
    { barcode: `77${String(1).padStart(11, '0')}` },
    { updatedSince: new Date(Date.now() - 60_000).toISOString() },
    { isAvailable: true, categoryIds: [categories[1]!.id] }
  ]
  for (const query of queries) {
    for (const filters of filterSets) {
      const expected = await scan(query, filters)
      const label = `${when}: "${query}" ${JSON.stringify(filters)}`
      // By page number, one past the last page included.
      const pages = Math.ceil(expected.length / LIMIT) + 1
      for (let page = 1; page <= pages; page++) {
        const found = await findSearchMatches(db, query, filters, byNumber(page))
        const want = expected.slice((page - 1) * LIMIT, page * LIMIT)
        if (found.total !== expected.length) t.equal(found.total, expected.length, `${label}: total of page ${page}`)
        if (JSON.stringify(found.ids) !== JSON.stringify(want.map((r) => r.id))) t.same(found.ids, want.map((r) => r.id), `${label}: page ${page}`)
      }
      // By cursor, from page 1 to the end.
      let found = await findSearchMatches(db, query, filters, byNumber(1))
      const walked = [...found.ids]
      for (let page = 2; found.next !== null; page++) {
        found = await findSearchMatches(db, query, filters, byCursor(page, found.next))
        t.equal(found.total, expected.length, `${label}: total by cursor`)
        walked.push(...found.ids)
      }
      t.same(walked, expected.map((r) => r.id), `${label}: every page by cursor`)
      t.equal(await countMatchingProducts(db, { query, ...filters }), expected.length, `${label}: the count alone`)
    }
  }
}

t.test('search pages and totals equal a plain scan', async (t) => {
  await importFile(catalogue(30, 0))
  const [some] = await scan('walnut', {})
  t.ok(some, 'the catalogue has matches')
  await expectExact(t, 'first import, no heads')
  // A head for every piece, however rare: each change below then has heads to keep up to date.
  await db.execute(sql`select rebuild_search_heads(1)`)
  t.ok(await headCount() > 50, 'every piece has a head')
  await expectExact(t, 'first import')

  // Renamed, re-coded, combinations added and dropped.
  await importFile(catalogue(30, 2))
  await expectExact(t, 'after renames')

  // Stock taken: availability moves, the search rows do not need to.
  const [row] = await execute<{ id: string }>(db, sql`select id from products where available limit 1`)
  await db.execute(sql`update products set quantity = 0 where id = ${row!.id}`)
  await db.execute(sql`update combinations set quantity = 0 where product_id = ${row!.id}`)
  await db.transaction(async (tx) => {
    const locks = await lockProducts(tx, [row!.id])
    await writeDocuments(tx, locks, await refreshProducts(tx, locks, [row!.id], new Date()))
  })
  await expectExact(t, 'after a stock change')

  await importFile(catalogue(30, 2).slice(4, 25), true)
  const [left] = await execute<{ n: number }>(db, sql`select count(*)::int as n from product_search`)
  t.equal(left!.n, 21, 'removed products leave the search table')
  await expectExact(t, 'after --replace removed some')
})

t.test('a piece many products share: its first page from its head, kept exact by large and small imports', async (t) => {
  const many = Array.from({ length: 600 }, (_, i) => makeProduct({ id: crypto.randomUUID(), name: `${i % 3 === 0 ? 'Walnut' : 'Oak'} Bowl ${i}`, sku: `BIG-${i}` }))
  // 600 products in and the earlier ones out: past 500 changed texts the commit rebuilds every
  // head, for the pieces at least 300 products contain.
  await importFile(many, true)
  const heads = await execute<{ piece: string, products: number }>(db, sql`select piece, products from search_heads order by piece`)
  t.same(heads.filter((h) => ['bowl', 'walnut', 'oak'].includes(h.piece)), [{ piece: 'bowl', products: 600 }, { piece: 'oak', products: 400 }],
    'a head for each piece 300 products share, none for rarer ones (walnut: 200)')
  t.same(await staleHeads(), [], 'the rebuilt heads equal their matches')

  const readingSearch = async (query: string, window: ListWindow) => {
    const { result: found, rowsRead } = await readingRows(db, 'product_search', (tx) => findSearchMatches(tx, query, {}, window))
    return { found, rowsRead }
  }
  const expectPage = async (query: string, when: string) => {
    const expected = await scan(query, {})
    const { found, rowsRead } = await readingSearch(query, byNumber(1))
    t.equal(found.total, expected.length, `${when}: "${query}" total`)
    t.same(found.ids, expected.slice(0, LIMIT).map((r) => r.id), `${when}: "${query}" page 1`)
    t.same(found.next, [expected[LIMIT - 1]!.sort_name, expected[LIMIT - 1]!.id], `${when}: "${query}" cursor to page 2`)
    return rowsRead
  }
  const rows = { oak: await expectPage('Oak', 'rebuilt'), walnut: await expectPage('walnut', 'rebuilt') }
  t.equal(rows.oak, 0, 'a piece with a head reads its head alone, none of its 400 matches')
  t.ok(rows.walnut >= 200, `a rarer piece reads its matches (${rows.walnut})`)
  t.equal(await expectPage('bow', 'rebuilt'), 0, 'nor the 600 of a shorter piece')
  // Past page 1 the search counts its matches, and agrees with the head.
  const second = await readingSearch('bowl', byNumber(2))
  t.equal(second.found.total, 600, 'page 2 counts the same total')
  t.ok(second.rowsRead >= 600, 'page 2 reads the matches')

  // One product renamed: the commit counts again the heads of the pieces of its old and new text.
  many[0] = { ...many[0]!, name: 'Oak Cup 0' }
  await importFile(many)
  t.same(await staleHeads(), [], 'after a rename every head equals its matches')
  t.equal((await execute<{ products: number }>(db, sql`select products from search_heads where piece = 'oak'`))[0]!.products, 401, 'the renamed product joined the oak head')
  await expectPage('oak', 'after a rename')
  await expectPage('bowl', 'after a rename')

  // Two imports at once, each renaming other products: whichever commits last, the heads match.
  const renamed = (from: number, name: string) => many.map((p, i) => i >= from && i < from + 20 ? { ...p, name: `${name} ${i}` } : p)
  await Promise.all([importFile(renamed(10, 'Oak Tray')), importFile(renamed(40, 'Pine Bowl'))])
  t.same(await staleHeads(), [], 'after two imports at once every head equals its matches')
  await expectPage('oak', 'after two imports at once')
  await expectPage('bowl', 'after two imports at once')
})
