// `storefront catalog import FILE --replace`: the catalogue becomes exactly the file. Products
// it leaves out are deleted with their children, answer 404 and leave the lists, each with a
// product.deleted event; orders keep their items.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { importCatalog, type ImportOptions } from '../../services/catalog-import.ts'
import { execute } from '../../db/client.ts'
import { CatalogError, checkCatalog } from '../../lib/catalog-file.ts'
import type { CatalogFile, CatalogProduct } from '../../schemas/catalog-file.ts'
import {
  authHeaders, buildTestApp, created, expectError, getJson, line, makeKey, makeProduct, orderBody, pollState, postOrder, type FullOrder
} from '../helper.ts'

const app = await buildTestApp(t)
const { key } = await makeKey(app)

async function importFile (file: CatalogFile, options: ImportOptions = {}) {
  const summary = await importCatalog(app.database, checkCatalog(structuredClone(file)), { batchSize: 2, ...options })
  await pollState(app)
  return summary
}

async function count (table: string, where: string): Promise<number> {
  const [row] = await execute<{ n: number }>(app.database.db, sql.raw(`select count(*)::int as n from ${table} where ${where}`))
  return row!.n
}

async function productEvents (after: number) {
  const rows = await execute<{ type: string, resourceId: string, apiKeyId: string | null, data: unknown }>(app.database.db, sql`
    select type, resource_id::text as "resourceId", api_key_id::text as "apiKeyId", data from change_events
    where seq > ${after} and type like 'product.%' order by seq`)
  return [...rows].sort((a, b) => `${a.type} ${a.resourceId}`.localeCompare(`${b.type} ${b.resourceId}`))
}

async function lastEventSeq (): Promise<number> {
  const [row] = await execute<{ seq: string | null }>(app.database.db, sql`select max(seq)::text as seq from change_events`)
  return Number(row!.seq ?? 0)
}

const category = { id: crypto.randomUUID(), name: 'Apparel' }
function shirt (name: string): CatalogProduct {
  const size = { id: crypto.randomUUID(), name: 'Size', options: [{ id: crypto.randomUUID(), name: 'M' }, { id: crypto.randomUUID(), name: 'L' }] }
  return makeProduct({
    name,
    categoryIds: [category.id],
    discount: { type: 'percentage', value: 10 },
    variants: [size],
    combinations: size.options.map((o) => ({ id: crypto.randomUUID(), optionIds: [o.id], quantity: 5, price: 20, isAvailable: true, discount: { type: 'amount' as const, value: 2 } }))
  })
}

/** Every row of the product and its children. */
async function rowsOf (p: CatalogProduct): Promise<number> {
  const variantIds = (p.variants ?? []).map((v) => `'${v.id}'`).join(',') || 'null'
  const optionIds = (p.variants ?? []).flatMap((v) => v.options.map((o) => `'${o.id}'`)).join(',') || 'null'
  const combinationIds = (p.combinations ?? []).map((c) => `'${c.id}'`).join(',') || 'null'
  return await count('products', `id = '${p.id}'`) +
    await count('product_categories', `product_id = '${p.id}'`) +
    await count('variants', `id in (${variantIds}) or product_id = '${p.id}'`) +
    await count('variant_options', `id in (${optionIds})`) +
    await count('combinations', `id in (${combinationIds}) or product_id = '${p.id}'`) +
    await count('combination_options', `combination_id in (${combinationIds})`) +
    await count('discounts', `product_id = '${p.id}' or combination_id in (${combinationIds})`)
}

t.test('products the file leaves out are removed; their orders keep their items', async (t) => {
  const gone = shirt('Retired shirt')
  const alsoGone = makeProduct({ name: 'Retired mug', categoryIds: [category.id] })
  const kept = makeProduct({ name: 'Kept mug', categoryIds: [category.id] })
  await importFile({ categories: [category], products: [gone, alsoGone, kept] })
  t.equal(await rowsOf(gone), 1 + 1 + 1 + 2 + 2 + 2 + 3, 'the product and its children are stored')

  const order = await created<FullOrder>(t, await postOrder(app, key, orderBody([line(gone, 2, gone.combinations![0]!.id), line(kept, 1)])))
  const orderBefore = (await getJson(app, key, `/external/v1/orders/${order.id}`)).json<FullOrder>()
  t.equal(orderBefore.items.length, 2)

  const added = makeProduct({ name: 'New mug' })
  const before = await lastEventSeq()
  // The order took stock of the kept product: the file puts it back, which is a change.
  t.strictSame(await importFile({ categories: [category], products: [kept, added] }, { replace: true }),
    { categories: 1, brands: 0, products: 2, created: 1, updated: 1, unchanged: 0, removed: 2 })

  for (const p of [gone, alsoGone]) {
    expectError(t, await app.inject({ url: `/external/v1/products/${p.id}`, headers: authHeaders(key) }), 404, 'product_not_found')
    t.equal(await rowsOf(p), 0, `${p.name}: no row of it or its children is left`)
  }
  const list = (await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })).json()
  t.strictSame(list.items.map((p: { id: string }) => p.id).sort(), [kept.id, added.id].sort(), 'the list holds only the file\'s products')
  t.equal(list.total, 2)
  const inCategory = (await app.inject({ url: '/external/v1/categories', headers: authHeaders(key) })).json()
  t.match(inCategory.items, [{ id: category.id, productCount: 1 }], 'a category counts only what is left')

  t.strictSame((await getJson(app, key, `/external/v1/orders/${order.id}`)).json(), orderBefore, 'the order is as it was, its items too')
  t.equal(await count('order_items', `product_id = '${gone.id}'`), 1, 'the removed product\'s order line is kept')

  t.strictSame(await productEvents(before), [
    { type: 'product.created', resourceId: added.id, apiKeyId: null, data: {} },
    ...[gone.id, alsoGone.id].sort().map((id) => ({ type: 'product.deleted', resourceId: id, apiKeyId: null, data: {} })),
    { type: 'product.updated', resourceId: kept.id, apiKeyId: null, data: {} }
  ], 'one event per product created, changed and removed')

  const again = await lastEventSeq()
  t.strictSame(await importFile({ products: [kept, added] }, { replace: true }),
    { categories: 0, brands: 0, products: 2, created: 0, updated: 0, unchanged: 2, removed: 0 }, 'the same file again changes nothing')
  t.strictSame(await productEvents(again), [])
})

t.test('a product may take the children of one the same import removes', async (t) => {
  const owner = shirt('Old shirt')
  await importFile({ categories: [category], products: [owner] })
  const heir = makeProduct({ name: 'New shirt', variants: owner.variants, combinations: owner.combinations })

  const refused = await importFile({ products: [heir] }).then(() => null, (err: unknown) => err)
  t.ok(refused instanceof CatalogError)
  t.match((refused as Error).message, 'products[0].variants[0].id: belongs to another product', 'without --replace the owner stays: refused')

  const stored = await count('products', 'true')
  t.match(await importFile({ products: [heir] }, { replace: true }), { created: 1, removed: stored }, 'the owner and all else is removed')
  const body = (await app.inject({ url: `/external/v1/products/${heir.id}`, headers: authHeaders(key) })).json()
  t.strictSame(body.combinations.map((c: { id: string }) => c.id), owner.combinations!.map((c) => c.id))
  expectError(t, await app.inject({ url: `/external/v1/products/${owner.id}`, headers: authHeaders(key) }), 404, 'product_not_found')
})

t.test('a bad file removes nothing; an empty list removes everything', async (t) => {
  const a = makeProduct()
  const b = makeProduct()
  await importFile({ products: [a, b] }, { replace: true })
  const refused = await importFile({ products: [a, { ...b, price: -1 }] }, { replace: true }).then(() => null, (err: unknown) => err)
  t.ok(refused instanceof CatalogError)
  t.equal(await count('products', 'true'), 2, 'both products are still there')

  t.match(await importFile({ products: [] }, { replace: true }), { products: 0, removed: 2 })
  t.equal(await count('products', 'true'), 0)
})
