// The import as `storefront catalog import` runs it: the file read as a stream of bytes, its
// items checked one at a time and written in batches inside one transaction. Small batches
// here, so a few products cross several of them.
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { importCatalog, type ImportOptions } from '../../services/catalog-import.ts'
import { execute } from '../../db/client.ts'
import { CatalogError, readCatalog } from '../../lib/catalog-file.ts'
import type { CatalogFile, CatalogProduct } from '../../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, makeKey, makeProduct, pollState } from '../helper.ts'

// Events stay unpublished here (no publisher run), so the test sees them as the import wrote them.
const app = await buildTestApp(t, { env: { EVENT_PUBLISH_MS: '3600000' } })
const { key } = await makeKey(app)

/** The text in chunks of `size` bytes, so items, strings and multi-byte characters are cut anywhere. */
async function * chunks (text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text)
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size)
}

async function importText (text: string, options: ImportOptions = {}) {
  const summary = await importCatalog(app.database, readCatalog(chunks(text, 7)), { batchSize: 2, ...options })
  await pollState(app)
  return summary
}

const importFile = (file: CatalogFile, options: ImportOptions = {}) => importText(JSON.stringify(file, null, 1), options)

async function failure (t: Test, text: string): Promise<CatalogError> {
  const error = await importText(text).then(() => null, (err: unknown) => err)
  t.ok(error instanceof CatalogError, 'refused as a CatalogError')
  return error as CatalogError
}

/** Every product row and its children, as text: equal snapshots mean an unchanged catalogue. */
async function catalogRows (): Promise<string> {
  const parts: string[] = []
  for (const table of ['categories', 'brands', 'products', 'product_categories', 'variants', 'variant_options', 'combinations', 'combination_options', 'discounts']) {
    const [row] = await execute<{ rows: string | null }>(app.database.db, sql.raw(`select json_agg(t order by t::text)::text as rows from ${table} t`))
    parts.push(`${table}: ${row!.rows ?? '[]'}`)
  }
  return parts.join('\n')
}

async function lastEventSeq (): Promise<number> {
  const [row] = await execute<{ seq: string | null }>(app.database.db, sql`select max(seq)::text as seq from change_events`)
  return Number(row!.seq ?? 0)
}

async function eventsAfter (seq: number) {
  return [...await execute<{ type: string, resourceId: string, apiKeyId: string | null, data: unknown, position: string | null }>(app.database.db, sql`
    select type, resource_id::text as "resourceId", api_key_id::text as "apiKeyId", data, position::text as position
    from change_events where seq > ${seq} and type like 'product.%' order by seq`)]
}

const sorted = <T extends { type: string, resourceId: string }>(events: T[]) =>
  [...events].sort((a, b) => `${a.type} ${a.resourceId}`.localeCompare(`${b.type} ${b.resourceId}`))

async function updatedAt (id: string): Promise<string> {
  const [row] = await execute<{ at: string }>(app.database.db, sql`select updated_at::text as at from products where id = ${id}`)
  return row!.at
}

function withCombinations (name: string): CatalogProduct {
  const size = { id: crypto.randomUUID(), name: 'Size', options: [{ id: crypto.randomUUID(), name: 'S' }, { id: crypto.randomUUID(), name: 'L' }] }
  return makeProduct({
    name,
    variants: [size],
    combinations: size.options.map((o, i) => ({ id: crypto.randomUUID(), optionIds: [o.id], quantity: i + 1, price: 5 + i, isAvailable: true, discount: { type: 'amount' as const, value: 1 } }))
  })
}

t.test('a streamed file in many batches imports like the same file in memory', async (t) => {
  const category = { id: crypto.randomUUID(), name: 'Café ☕ 咖啡' }
  const brand = { id: crypto.randomUUID(), name: 'Ünïcødé 😀' }
  const products = Array.from({ length: 7 }, (_, i) => i % 3 === 0
    ? { ...withCombinations(`Streamed ${i} — “quoted” \\ backslash`), categoryIds: [category.id], brandId: brand.id }
    : makeProduct({ name: `Streamed ${i} ✓`, categoryIds: [category.id], brandId: brand.id, discount: { type: 'percentage', value: 10 } }))
  const before = await lastEventSeq()
  // A byte-order mark first, unknown fields anywhere: both ignored.
  const text = `\uFEFF${JSON.stringify({ version: 3, categories: [category], brands: [brand], products, extra: { nested: [1, { x: '}' }] } }, null, 2)}`
  t.strictSame(await importText(text), { categories: 1, brands: 1, products: 7, created: 7, updated: 0, unchanged: 0, removed: 0 })

  for (const p of products) {
    const res = await app.inject({ url: `/external/v1/products/${p.id}`, headers: authHeaders(key) })
    t.equal(res.statusCode, 200)
    t.match(res.json(), { id: p.id, name: p.name, categoryIds: [category.id], brandId: brand.id, combinations: p.combinations?.map((c) => ({ id: c.id, sellPrice: c.price - 1 })) ?? [] })
  }
  t.strictSame(sorted(await eventsAfter(before)), sorted(products.map((p) => ({ type: 'product.created', resourceId: p.id, apiKeyId: null, data: {}, position: null }))),
    'one product.created event per product, with empty data and no key, not yet published')
})

t.test('an import that leaves products as they are changes nothing about them', async (t) => {
  const products = [makeProduct(), withCombinations('Unchanged shirt'), makeProduct()]
  await importFile({ products })
  const rows = await catalogRows()
  const stamps = await Promise.all(products.map((p) => updatedAt(p.id)))
  const before = await lastEventSeq()

  // The same content, keys in another order and ids in upper case: the same products.
  const reordered = products.map((p) => Object.fromEntries(Object.entries(p).reverse())) as CatalogProduct[]
  t.strictSame(await importFile({ products: reordered }), { categories: 0, brands: 0, products: 3, created: 0, updated: 0, unchanged: 3, removed: 0 })
  t.equal(await catalogRows(), rows, 'no row rewritten')
  t.strictSame(await Promise.all(products.map((p) => updatedAt(p.id))), stamps, 'updatedAt stays')
  t.strictSame(await eventsAfter(before), [], 'no event')

  // One changed among them: only it moves, and only it has an event.
  const changed = [products[0]!, { ...products[1]!, name: 'Unchanged shirt, renamed' }, products[2]!]
  t.strictSame(await importFile({ products: changed }), { categories: 0, brands: 0, products: 3, created: 0, updated: 1, unchanged: 2, removed: 0 })
  t.strictSame(await eventsAfter(before), [{ type: 'product.updated', resourceId: products[1]!.id, apiKeyId: null, data: {}, position: null }])
  const after = await Promise.all(products.map((p) => updatedAt(p.id)))
  t.equal(after[0], stamps[0])
  t.not(after[1], stamps[1], 'the changed product has a new updatedAt')
  t.equal(after[2], stamps[2])
  const shirt = (await app.inject({ url: `/external/v1/products/${products[1]!.id}`, headers: authHeaders(key) })).json()
  t.equal(shirt.combinations.length, 2, 'its combinations were written again, once')
})

t.test('categories and brands may come after the products that name them', async (t) => {
  const category = { id: crypto.randomUUID(), name: 'Later' }
  const brand = { id: crypto.randomUUID(), name: 'Later brand' }
  const products = Array.from({ length: 5 }, () => makeProduct({ categoryIds: [category.id], brandId: brand.id }))
  const text = `{"products": ${JSON.stringify(products)}, "brands": [${JSON.stringify(brand)}], "categories": [${JSON.stringify(category)}]}`
  t.match(await importText(text), { categories: 1, brands: 1, products: 5, created: 5 })
  const listed = (await app.inject({ url: `/external/v1/products?categoryIds=${category.id}&brandIds=${brand.id}`, headers: authHeaders(key) })).json()
  t.equal(listed.total, 5, 'every product linked to both')

  const nowhere = crypto.randomUUID()
  const rows = await catalogRows()
  const error = await failure(t, `{"products": ${JSON.stringify([makeProduct(), makeProduct({ categoryIds: [category.id, nowhere] }), makeProduct({ brandId: nowhere })])}, "categories": []}`)
  t.strictSame(error.problems, [`products[1].categoryIds[1]: no category has id ${nowhere}`, `products[2].brandId: no brand has id ${nowhere}`])
  t.equal(await catalogRows(), rows, 'nothing written')
})

t.test('a problem late in the file rolls back the batches written before it', async (t) => {
  const good = Array.from({ length: 9 }, () => makeProduct())
  const rows = await catalogRows()
  const before = await lastEventSeq()

  const invalid = [...good, { ...makeProduct(), price: 'free' }, makeProduct({ id: good[0]!.id })]
  const error = await failure(t, JSON.stringify({ products: invalid }))
  t.strictSame(error.problems, ['products[9].price: must be a number', `products[10].id: id ${good[0]!.id} is already used at products[0].id`],
    'every problem of the file, found after the first batches were written')

  const broken = `{"products": ${JSON.stringify(good)}`.replace(/}]$/, '},')
  const unreadable = await failure(t, broken)
  t.equal(unreadable.problems.length, 1)
  t.match(unreadable.problems[0], /^\(root\): not valid JSON: the document ends early, at byte \d+ \(inside products\)$/)
  const garbled = await failure(t, `{"products": [${JSON.stringify(good[0])}, ${JSON.stringify(good[1])}, {"id": 12,, }]}`)
  t.match(garbled.problems, [/^\(root\): not valid JSON: .* \(in products\[2\], which starts at byte \d+\)$/])
  t.match((await failure(t, '[1, 2]')).problems, ['(root): must be an object'])
  t.match((await failure(t, '{"products": {"id": 1}}')).problems, ['products: must be an array'])
  t.match((await failure(t, `{"products": [${JSON.stringify(makeProduct())}], "products": [${JSON.stringify(makeProduct())}]}`)).problems, ['products: appears twice in the file'])

  t.equal(await catalogRows(), rows, 'the catalogue is unchanged')
  t.strictSame(await eventsAfter(before), [], 'and no event was written')
})

t.test('many problems are listed up to a limit, and counted beyond it', async (t) => {
  const error = await failure(t, JSON.stringify({ products: Array.from({ length: 30 }, () => ({ ...makeProduct(), price: -1 })) }))
  const lines = error.message.split('\n')
  t.equal(lines.length, 1 + 20 + 1)
  t.equal(lines.at(-1), '  … and 10 more')
})
