// Writes a checked catalogue file: upserts by id in one transaction, replacing each listed
// product's categories, variants, combinations and discounts.
import { inArray, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import { CatalogError } from '../lib/catalog-file.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { toCents, toDecimalText } from '../lib/money.ts'
import type { CatalogFile, CatalogProduct } from '../schemas/catalog-file.ts'
import type { Database, Tx } from './client.ts'
import { bumpCatalogVersion } from './settings.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import { renumberProducts } from './products.ts'
import {
  brands, categories, combinationOptions, combinations, discounts, productCategories, products, variantOptions, variants
} from './schema.ts'

// PostgreSQL takes at most 65,535 parameters a statement; no table here has more than 13 columns.
const CHUNK = 2000

async function insertAll<T extends PgTable> (tx: Tx, table: T, rows: Array<T['$inferInsert']>, upsert?: { target: unknown, set: Record<string, unknown> }) {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const insert = tx.insert(table).values(rows.slice(i, i + CHUNK) as never)
    await (upsert ? insert.onConflictDoUpdate(upsert as never) : insert)
  }
}

const decimal = (amount: number) => toDecimalText(toCents(amount))
const excluded = (column: string) => sql.raw(`excluded.${column}`)

function searchText (p: CatalogProduct): string {
  return [p.name, p.sku, p.barcode, ...(p.combinations ?? []).flatMap((c) => [c.sku, c.barcode])]
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .map((s) => s.toLowerCase())
    .join('\n')
}

/** Whether it can be ordered now: marked available, with stock, or with an available combination. */
function orderable (p: CatalogProduct): boolean {
  const inStock = (item: { quantity?: number | null, isAvailable: boolean }) => item.isAvailable && (item.quantity == null || item.quantity > 0)
  return p.isAvailable && (p.combinations?.length ? p.combinations.some(inStock) : inStock(p))
}

function discountRow (owner: { productId: string } | { combinationId: string }, d: NonNullable<CatalogProduct['discount']>) {
  return { ...owner, type: d.type, value: decimal(d.value), startsAt: d.startsAt ? new Date(d.startsAt) : null, endsAt: d.endsAt ? new Date(d.endsAt) : null }
}

export interface ImportSummary { categories: number, brands: number, products: number }

export async function importCatalog (database: Database, catalog: CatalogFile): Promise<ImportSummary> {
  const list = catalog.products ?? []
  const productIds = list.map((p) => p.id)
  await database.db.transaction(async (tx) => {
    await tx.execute(sql.raw(`select pg_advisory_xact_lock(${ADVISORY_LOCKS.catalogImport})`))
    if (catalog.categories?.length) {
      await insertAll(tx, categories, catalog.categories.map(({ id, name }) => ({ id, name })), { target: categories.id, set: { name: excluded('name') } })
    }
    if (catalog.brands?.length) {
      await insertAll(tx, brands, catalog.brands.map(({ id, name }) => ({ id, name })), { target: brands.id, set: { name: excluded('name') } })
    }
    await checkReferences(tx, catalog)

    const now = new Date()
    await insertAll(tx, products, list.map((p) => ({
      available: orderable(p),
      contentHash: jsonHash(p),
      id: p.id,
      name: p.name,
      sku: p.sku ?? null,
      barcode: p.barcode ?? null,
      // With combinations, stock lives on them.
      quantity: p.combinations?.length ? null : (p.quantity ?? null),
      price: decimal(p.price),
      isAvailable: p.isAvailable,
      imageUrl: p.imageUrl ?? null,
      brandId: p.brandId ?? null,
      searchText: searchText(p),
      updatedAt: now
    })), {
      target: products.id,
      set: {
        ...Object.fromEntries(['name', 'sku', 'barcode', 'quantity', 'price', 'is_available', 'image_url', 'brand_id', 'search_text', 'available', 'content_hash']
          .map((c) => [c.replace(/_(\w)/g, (_, l: string) => l.toUpperCase()), excluded(c)])),
        // A product imported as it already was keeps its updatedAt: nothing integrators see changed.
        updatedAt: sql`case when ${products.contentHash} is distinct from excluded.content_hash then excluded.updated_at else ${products.updatedAt} end`
      }
    })

    for (let i = 0; i < productIds.length; i += CHUNK) {
      const ids = productIds.slice(i, i + CHUNK)
      await tx.delete(productCategories).where(inArray(productCategories.productId, ids))
      await tx.delete(discounts).where(inArray(discounts.productId, ids))
      await tx.delete(combinations).where(inArray(combinations.productId, ids))
      await tx.delete(variants).where(inArray(variants.productId, ids))
    }
    await checkChildIds(tx, list)

    await insertAll(tx, productCategories, list.flatMap((p) =>
      [...new Set((p.categoryIds ?? []).map((id) => id.toLowerCase()))].map((categoryId) => ({ productId: p.id, categoryId }))))
    await insertAll(tx, variants, list.flatMap((p) => (p.variants ?? []).map((v, position) => ({ id: v.id, productId: p.id, name: v.name, position }))))
    await insertAll(tx, variantOptions, list.flatMap((p) => (p.variants ?? []).flatMap((v) =>
      v.options.map((o, position) => ({ id: o.id, variantId: v.id, name: o.name, position })))))
    await insertAll(tx, combinations, list.flatMap((p) => (p.combinations ?? []).map((c, position) => ({
      id: c.id,
      productId: p.id,
      sku: c.sku ?? null,
      barcode: c.barcode ?? null,
      quantity: c.quantity ?? null,
      price: decimal(c.price),
      isAvailable: c.isAvailable,
      imageUrl: c.imageUrl ?? null,
      position
    }))))
    await insertAll(tx, combinationOptions, list.flatMap((p) => {
      // Options are kept in the order of the product's variants.
      const variantOf = new Map((p.variants ?? []).flatMap((v, vi) => v.options.map((o) => [o.id.toLowerCase(), vi] as const)))
      return (p.combinations ?? []).flatMap((c) => c.optionIds.map((optionId) => ({
        combinationId: c.id, optionId, position: variantOf.get(optionId.toLowerCase())!
      })))
    }))
    await insertAll(tx, discounts, list.flatMap((p) => [
      ...(p.discount ? [discountRow({ productId: p.id }, p.discount)] : []),
      ...(p.combinations ?? []).flatMap((c) => (c.discount ? [discountRow({ combinationId: c.id }, c.discount)] : []))
    ]))
    await renumberProducts(tx)
  })
  await bumpCatalogVersion(database.db)
  // Fresh statistics for the planner at once: PGlite never runs autovacuum, and PostgreSQL's
  // may come minutes later, while a new catalogue without them plans list queries badly.
  await database.db.execute(sql`analyze products, product_categories, variants, variant_options, combinations, combination_options, discounts`)
  return { categories: catalog.categories?.length ?? 0, brands: catalog.brands?.length ?? 0, products: list.length }
}

async function existingIds (tx: Tx, table: typeof categories | typeof brands | typeof variants | typeof variantOptions | typeof combinations, ids: string[]): Promise<Set<string>> {
  const found = new Set<string>()
  for (let i = 0; i < ids.length; i += CHUNK) {
    const rows = await tx.select({ id: table.id }).from(table).where(inArray(table.id, ids.slice(i, i + CHUNK)))
    for (const row of rows) found.add(row.id.toLowerCase())
  }
  return found
}

// Categories and brands a product names must exist, in the file or already in the store.
async function checkReferences (tx: Tx, catalog: CatalogFile) {
  const list = catalog.products ?? []
  const problems: string[] = []
  const known = await existingIds(tx, categories, [...new Set(list.flatMap((p) => p.categoryIds ?? []))])
  const knownBrands = await existingIds(tx, brands, [...new Set(list.flatMap((p) => (p.brandId ? [p.brandId] : [])))])
  list.forEach((p, i) => {
    p.categoryIds?.forEach((id, ci) => { if (!known.has(id.toLowerCase())) problems.push(`products[${i}].categoryIds[${ci}]: no category has id ${id}`) })
    if (p.brandId && !knownBrands.has(p.brandId.toLowerCase())) problems.push(`products[${i}].brandId: no brand has id ${p.brandId}`)
  })
  if (problems.length > 0) throw new CatalogError(problems)
}

// After the listed products' children are gone, any variant, option or combination id still
// in the store belongs to another product: the file may not take it over.
async function checkChildIds (tx: Tx, list: CatalogProduct[]) {
  const problems: string[] = []
  const taken = [
    await existingIds(tx, variants, list.flatMap((p) => (p.variants ?? []).map((v) => v.id))),
    await existingIds(tx, variantOptions, list.flatMap((p) => (p.variants ?? []).flatMap((v) => v.options.map((o) => o.id)))),
    await existingIds(tx, combinations, list.flatMap((p) => (p.combinations ?? []).map((c) => c.id)))
  ]
  const isTaken = (id: string) => taken.some((set) => set.has(id.toLowerCase()))
  list.forEach((p, i) => {
    p.variants?.forEach((v, vi) => {
      if (isTaken(v.id)) problems.push(`products[${i}].variants[${vi}].id: belongs to another product`)
      v.options.forEach((o, oi) => { if (isTaken(o.id)) problems.push(`products[${i}].variants[${vi}].options[${oi}].id: belongs to another product`) })
    })
    p.combinations?.forEach((c, ci) => { if (isTaken(c.id)) problems.push(`products[${i}].combinations[${ci}].id: belongs to another product`) })
  })
  if (problems.length > 0) throw new CatalogError(problems)
}
