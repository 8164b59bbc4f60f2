// Fills a migrated database for a benchmark: the generated catalogue written straight into
// the tables with bulk SQL (tens of thousands of rows a statement, secondary indexes built
// once at the end), and an API key with every scope. `storefront catalog import` takes about
// a minute for 100,000 products (it upserts, checks references and hashes each product);
// this takes seconds. It derives what the import derives (search text, availability, stock
// on combinations, the list positions: db/products.ts renumberProducts itself, the product
// documents: services/catalog.ts renderMissingDocuments, the list's kept pages:
// rebuildKeptPages) with the same rules; run.ts checks the result against the app's answers.
import { sql } from 'drizzle-orm'
import { createApiKey } from '../db/api-keys.ts'
import { execute, type Database, type Tx } from '../db/client.ts'
import { renumberProducts } from '../db/products.ts'
import { rebuildSearchHeads } from '../db/search.ts'
import { resetCatalog } from '../db/settings.ts'
import { SCOPES } from '../lib/api-key-secret.ts'
import { rebuildKeptPages, renderMissingDocuments } from '../services/catalog.ts'
import { StockKeeper } from '../services/stock.ts'
import { toCents, toDecimalText } from '../lib/money.ts'
import type { CatalogProduct } from '../schemas/catalog-file.ts'
import { orderable, searchText, type BenchCatalog } from './catalog.ts'

/** The key's own rate limit: far above what a run can send, so the limiter is exercised but never refuses. */
export const BENCH_RATE_LIMIT = 1_000_000_000

/** Rows a statement writes: one JSON parameter of a few megabytes. */
const CHUNK = 20_000

/** The catalogue's tables, in the order they are filled (each after those it references). */
const CATALOGUE_TABLES = ['categories', 'brands', 'products', 'product_search', 'product_categories', 'variants', 'variant_options', 'combinations', 'combination_options', 'discounts']

type Row = Record<string, string | number | boolean | null>

/**
 * Inserts rows with `insert … select … from json_to_recordset($1)`: one parameter a chunk,
 * the same on postgres.js and PGlite. `columns` maps each column to its SQL type.
 */
async function insertRows (tx: Tx, table: string, columns: Record<string, string>, rows: Row[]): Promise<void> {
  const names = Object.keys(columns).join(', ')
  const types = Object.entries(columns).map(([name, type]) => `${name} ${type}`).join(', ')
  for (let i = 0; i < rows.length; i += CHUNK) {
    const json = JSON.stringify(rows.slice(i, i + CHUNK))
    await tx.execute(sql`insert into ${sql.raw(table)} (${sql.raw(names)}) select ${sql.raw(names)} from json_to_recordset(${json}::json) as r(${sql.raw(types)})`)
  }
}

const decimal = (amount: number) => toDecimalText(toCents(amount))

function discountRow (owner: { product_id: string } | { combination_id: string }, d: NonNullable<CatalogProduct['discount']>): Row {
  return { product_id: null, combination_id: null, ...owner, type: d.type, value: decimal(d.value), starts_at: d.startsAt ?? null, ends_at: d.endsAt ?? null }
}

/** Runs one SQL text and returns its rows: a drizzle transaction's or a postgres.js connection's. */
export type RunSql = (text: string) => Promise<Array<Record<string, unknown>>>

/**
 * Runs `fill` with the tables' secondary indexes dropped (those not behind a primary key or
 * a unique constraint; built again once at the end: far faster than keeping a trigram index
 * up to date row by row) and, for a superuser, without foreign-key triggers (the generated
 * rows are consistent by construction). Run it in a transaction, so that a failure leaves
 * the tables as they were.
 */
export async function withBulkLoad<T> (run: RunSql, tables: string[], fill: () => Promise<T>): Promise<T> {
  const indexes = await run(`
    select c.relname as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_class t on t.oid = i.indrelid
    where t.relname in (${tables.map((t) => `'${t}'`).join(', ')}) and t.relnamespace = 'public'::regnamespace
      and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)`) as Array<{ name: string, definition: string }>
  // Building a trigram index over a million rows may take longer than a request's statement timeout.
  await run('set local statement_timeout = 0')
  const [role] = await run('select rolsuper as superuser from pg_roles where rolname = current_user')
  if (role?.superuser) await run('set local session_replication_role = replica')
  for (const index of indexes) await run(`drop index "${index.name}"`)
  const result = await fill()
  for (const index of indexes) await run(index.definition)
  if (role?.superuser) await run('set local session_replication_role = origin')
  return result
}

/** Writes the catalogue into empty catalogue tables. */
export async function bulkLoadCatalog (database: Database, bench: BenchCatalog): Promise<void> {
  const { categories = [], brands = [], products = [] } = bench.catalog
  const statements: Array<{ table: string, columns: Record<string, string>, rows: Row[] }> = []
  const table = (name: string, columns: Record<string, string>) => {
    const rows: Row[] = []
    statements.push({ table: name, columns, rows })
    return rows
  }
  const categoryRows = table('categories', { id: 'uuid', name: 'text' })
  const brandRows = table('brands', { id: 'uuid', name: 'text' })
  const productRows = table('products', {
    id: 'uuid', name: 'text', sku: 'text', barcode: 'text', quantity: 'int', price: 'numeric', is_available: 'boolean', image_url: 'text', brand_id: 'uuid', available: 'boolean'
  })
  const searchRows = table('product_search', { product_id: 'uuid', sort_name: 'text', search_text: 'text' })
  const productCategoryRows = table('product_categories', { product_id: 'uuid', category_id: 'uuid' })
  const variantRows = table('variants', { id: 'uuid', product_id: 'uuid', name: 'text', position: 'int' })
  const optionRows = table('variant_options', { id: 'uuid', variant_id: 'uuid', name: 'text', position: 'int' })
  const combinationRows = table('combinations', {
    id: 'uuid', product_id: 'uuid', sku: 'text', barcode: 'text', quantity: 'int', price: 'numeric', is_available: 'boolean', image_url: 'text', position: 'int'
  })
  const combinationOptionRows = table('combination_options', { combination_id: 'uuid', option_id: 'uuid', position: 'int' })
  const discountRows = table('discounts', { product_id: 'uuid', combination_id: 'uuid', type: 'text', value: 'numeric', starts_at: 'timestamptz', ends_at: 'timestamptz' })

  for (const { id, name } of categories) categoryRows.push({ id, name })
  for (const { id, name } of brands) brandRows.push({ id, name })
  for (const p of products) {
    const combinations = p.combinations ?? []
    productRows.push({
      id: p.id,
      name: p.name,
      sku: p.sku ?? null,
      barcode: p.barcode ?? null,
      // With combinations, stock lives on them (as the import stores it).
      quantity: combinations.length ? null : (p.quantity ?? null),
      price: decimal(p.price),
      is_available: p.isAvailable,
      image_url: p.imageUrl ?? null,
      brand_id: p.brandId ?? null,
      available: orderable(p)
    })
    // The bench's names are ASCII, so JavaScript's lower case is PostgreSQL's lower(name).
    searchRows.push({ product_id: p.id, sort_name: p.name.toLowerCase(), search_text: searchText(p) })
    for (const categoryId of new Set(p.categoryIds ?? [])) productCategoryRows.push({ product_id: p.id, category_id: categoryId })
    const variantOf = new Map<string, number>()
    ;(p.variants ?? []).forEach((v, position) => {
      variantRows.push({ id: v.id, product_id: p.id, name: v.name, position })
      v.options.forEach((o, oi) => {
        optionRows.push({ id: o.id, variant_id: v.id, name: o.name, position: oi })
        variantOf.set(o.id, position)
      })
    })
    combinations.forEach((c, position) => {
      combinationRows.push({
        id: c.id, product_id: p.id, sku: c.sku ?? null, barcode: c.barcode ?? null, quantity: c.quantity ?? null, price: decimal(c.price), is_available: c.isAvailable, image_url: c.imageUrl ?? null, position
      })
      // Options are kept in the order of the product's variants.
      for (const optionId of c.optionIds) combinationOptionRows.push({ combination_id: c.id, option_id: optionId, position: variantOf.get(optionId)! })
      if (c.discount) discountRows.push(discountRow({ combination_id: c.id }, c.discount))
    })
    if (p.discount) discountRows.push(discountRow({ product_id: p.id }, p.discount))
  }

  await database.db.transaction(async (tx) => {
    await withBulkLoad((text) => execute(tx, sql.raw(text)), CATALOGUE_TABLES, async () => {
      for (const s of statements) await insertRows(tx, s.table, s.columns, s.rows)
    })
    // A superuser's load ran without triggers, so without the search heads' own.
    await rebuildSearchHeads(tx)
    // Unfiltered page-number lists are ranges of the maintained list positions: number the
    // products as an import does.
    await renumberProducts(tx)
  })
  // The read model's documents, rendered by the app's own code, then the list's pages kept
  // whole, as the instances' background rebuild builds them after an import.
  await renderMissingDocuments(new StockKeeper(database), 2000)
  while (await rebuildKeptPages(database, 1000) > 0);
  // Instances drop cached reads when the reset version moves, as after an import.
  await resetCatalog(database.db)
}

/**
 * Loads the catalogue and makes a key. `analyze` runs VACUUM ANALYZE: the planner's
 * statistics (the import refreshes them too) and the visibility map, without which every
 * index-only scan (list pages, their counts) also reads the table. That is the state
 * autovacuum reaches a minute or so after an import on PostgreSQL; PGlite runs no autovacuum.
 */
export async function seedStore (database: Database, bench: BenchCatalog, options: { analyze: boolean }): Promise<{ key: string, keyId: string, importMs: number }> {
  const started = performance.now()
  await bulkLoadCatalog(database, bench)
  if (options.analyze) await database.db.execute(sql.raw(`vacuum analyze ${[...CATALOGUE_TABLES, 'product_list_positions', 'product_list_pages', 'product_list_page_changes'].join(', ')}`))
  const importMs = performance.now() - started
  const { key, id: keyId } = await createApiKey(database.db, { name: 'bench', scopes: [...SCOPES], rateLimit: BENCH_RATE_LIMIT })
  return { key, keyId, importMs }
}
