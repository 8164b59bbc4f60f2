// Catalogue reads: the product list with its filters, one product, and the read model: each
// product's JSON rendered once into product_documents (written by db/stock.ts, in the
// transaction of every change to it) and sent as it is.
import { sql, type SQL } from 'drizzle-orm'
import { entityTag } from '../lib/entity-tag.ts'
import { nextPriceChange, sellPriceCents, toAmount, toCents, type Discount } from '../lib/money.ts'
import type { ListWindow, SortKey } from '../schemas/common.ts'
import type { Product } from '../schemas/products.ts'
import { execute, runStatement, statement, type Statement, type Tx } from './client.ts'
import { resetListPages } from './list-pages.ts'
import { whereClause, type ProductFilters } from './product-filters.ts'
import { findSearchMatches } from './search.ts'

export type { ProductFilters }

interface CombinationRow {
  id: string
  optionIds: string[]
  sku: string | null
  barcode: string | null
  quantity: number | null
  price: string
  isAvailable: boolean
  imageUrl: string | null
  discount: Discount | null
}

/** A product's row with its children as JSON: what a document is rendered from. */
export interface ProductRow {
  id: string
  name: string
  sku: string | null
  barcode: string | null
  quantity: number | null
  price: string
  is_available: boolean
  available: boolean
  image_url: string | null
  category_ids: string[]
  brand_id: string | null
  updated_at: string
  discount: Discount | null
  variants: Product['variants']
  combinations: CombinationRow[]
}

/** A product as integrators see it, and the instant its prices next change (when a discount starts or ends). */
export interface PricedProduct { product: Product, priceChangesAt: Date | null }

/** A discount row as JSON (`type`, `value` as text, `startsAt`, `endsAt`), or null. */
export const discountJson = (owner: 'product_id' | 'combination_id', ownerId: string) => sql.raw(`(select json_build_object(
    'type', d.type, 'value', d.value::text, 'startsAt', d.starts_at, 'endsAt', d.ends_at) from discounts d where d.${owner} = ${ownerId})`)

// One round trip: each product row carries its discount, variants and combinations as JSON.
export const PRODUCT_COLUMNS = sql`
  p.id, p.name, p.sku, p.barcode, p.quantity, p.price::text as price, p.is_available, p.available, p.image_url, p.brand_id,
  to_json(p.updated_at) as updated_at,
  coalesce((select json_agg(pc.category_id order by pc.category_id) from product_categories pc where pc.product_id = p.id), '[]'::json) as category_ids,
  ${discountJson('product_id', 'p.id')} as discount,
  coalesce((select json_agg(json_build_object('id', v.id, 'name', v.name, 'options',
      coalesce((select json_agg(json_build_object('id', o.id, 'name', o.name) order by o.position)
                from variant_options o where o.variant_id = v.id), '[]'::json)) order by v.position)
    from variants v where v.product_id = p.id), '[]'::json) as variants,
  coalesce((select json_agg(json_build_object('id', c.id, 'sku', c.sku, 'barcode', c.barcode,
      'quantity', c.quantity, 'price', c.price::text, 'isAvailable', c.is_available, 'imageUrl', c.image_url,
      'optionIds', coalesce((select json_agg(co.option_id order by co.position) from combination_options co
                             where co.combination_id = c.id), '[]'::json),
      'discount', ${discountJson('combination_id', 'c.id')}) order by c.position)
    from combinations c where c.product_id = p.id), '[]'::json) as combinations`

function earliest (a: Date | null, b: Date | null): Date | null {
  if (a === null) return b
  if (b === null) return a
  return a < b ? a : b
}

function toProduct (row: ProductRow, now: Date): PricedProduct {
  const priceCents = toCents(row.price)
  let priceChangesAt = nextPriceChange(row.discount, now)
  const combinations = row.combinations.map((c) => {
    // A combination without a discount of its own takes its product's.
    const discount = c.discount ?? row.discount
    priceChangesAt = earliest(priceChangesAt, nextPriceChange(discount, now))
    const cents = toCents(c.price)
    return {
      id: c.id,
      optionIds: c.optionIds,
      sku: c.sku,
      barcode: c.barcode,
      quantity: c.quantity,
      price: toAmount(cents),
      sellPrice: toAmount(sellPriceCents(cents, discount, now)),
      // Orderable now: its product and itself marked available, and stock left when tracked.
      isAvailable: row.is_available && c.isAvailable && (c.quantity === null || c.quantity > 0),
      imageUrl: c.imageUrl
    }
  })
  const quantity = combinations.length === 0
    ? row.quantity
    : combinations.some((c) => c.quantity === null) ? null : combinations.reduce((sum, c) => sum + c.quantity!, 0)
  // In the response schema's key order: JSON.stringify of it is, byte for byte, what the
  // schema's serializer would send (test/services/read-model.test.ts holds it to that).
  return {
    product: {
      id: row.id,
      name: row.name,
      sku: row.sku,
      barcode: row.barcode,
      quantity,
      price: toAmount(priceCents),
      sellPrice: toAmount(sellPriceCents(priceCents, row.discount, now)),
      isAvailable: row.available,
      productImageUrl: row.image_url,
      categoryIds: row.category_ids,
      brandId: row.brand_id,
      variants: row.variants,
      combinations,
      updatedAt: new Date(row.updated_at).toISOString()
    },
    priceChangesAt
  }
}

/** A stored document's columns: its JSON, its entity tag, when its price next changes (ms). */
export const DOCUMENT_COLUMNS = sql`d.body, d.etag, (extract(epoch from d.price_changes_at) * 1000)::float8 as changes_at`

/** Products after a sort key, as a condition the name index serves. */
const afterKey = (after: SortKey | null) => after === null ? sql`true` : sql`(lower(p.name), p.id) > (${after[0]}, ${after[1]}::uuid)`

export interface ProductListPage { items: ProductDocument[], next: SortKey | null }

/** A page of products by name, then id, as their stored documents (without `query`: see findSearchMatches). */
export async function listProducts (db: Tx, filters: Omit<ProductFilters, 'query'>, window: ListWindow, now = new Date()): Promise<ProductListPage> {
  const where = whereClause(filters) ?? sql`true`
  // The page's ids are chosen first and only those rows get their documents. A page by
  // number of a numbered list (see renumberProducts) is a range of its positions (the offset
  // of a page past the last one exceeds the integer column: compared as bigint), and one of
  // isAvailable alone is found by its availability blocks; otherwise OFFSET walks the index.
  const numbered = window.after === null ? numberedList(filters) : null
  const availability = window.after === null ? availabilityList(filters) : null
  const rows = numbered !== null
    // The most read page of all: a statement rendered once, nothing built per request.
    ? await runStatement<DocumentRow & { sort_name: string | null }>(db, NUMBERED_PAGE, [numbered, window.offset, window.limit + 1])
    : availability !== null
      ? await runStatement<DocumentRow & { sort_name: string | null }>(db, availabilityPage(window.limit + 1), [availability, window.offset])
      : await execute<DocumentRow & { sort_name: string | null }>(db, sql`select lower(p.name) as sort_name, p.id, ${DOCUMENT_COLUMNS}
        from (select p.id from products p where ${where} and ${afterKey(window.after)}
              order by lower(p.name), p.id limit ${window.limit + 1} offset ${window.offset}) as page_ids
        join products p on p.id = page_ids.id left join product_documents d on d.product_id = p.id
        order by lower(p.name), p.id`)
  const shown = rows.slice(0, window.limit)
  const last = shown.at(-1)
  return { items: await documentsOf(db, shown, now), next: rows.length > window.limit && last?.sort_name != null ? [last.sort_name, last.id] : null }
}

/**
 * The numbered list that holds exactly the products `filters` select (the whole catalogue,
 * one brand or one category), named as renumberProducts names it (ids as uuid::text writes
 * them: lower case); null when no numbered list does.
 */
function numberedList (filters: Omit<ProductFilters, 'query'>): string | null {
  const { categoryIds, brandIds, ...others } = filters
  if (Object.values(others).some((v) => v !== undefined)) return null
  if (categoryIds === undefined && brandIds === undefined) return ''
  if (categoryIds?.length === 1 && brandIds === undefined) return `category:${categoryIds[0]!.toLowerCase()}`
  if (brandIds?.length === 1 && categoryIds === undefined) return `brand:${brandIds[0]!.toLowerCase()}`
  return null
}

/** `isAvailable` when it is the only filter: a page by number of it is found by the availability blocks. */
function availabilityList (filters: Omit<ProductFilters, 'query'>): boolean | null {
  const { isAvailable, ...others } = filters
  if (isAvailable === undefined || Object.values(others).some((v) => v !== undefined)) return null
  return isAvailable
}

// A page by number of a numbered list: a range of its positions (the offset of a page past the
// last one exceeds the integer column: compared as bigint), then only those rows' documents.
// Positions are 1…n without gaps (renumberProducts rewrites them in the transaction of every
// import that adds, renames or removes products), so the range's upper bound takes nothing
// away; it is there for the planner, which otherwise judged its generic plan costlier and
// planned the statement again on every call (0.31 ms of planning; the same plan). The
// positions give the list's order, so the products' rows are not read but for the page's
// last shown row ($3 is the page size + 1), whose sort key the next page's cursor carries:
// joining the products for every row's lower(name) doubled the statement's time (0.79 ms
// against 0.38 at 100,000 products).
const NUMBERED_PAGE = statement(sql`select l.product_id as id, ${DOCUMENT_COLUMNS},
      case when l.position = $2::bigint + $3::integer - 1 then (select lower(p.name) from products p where p.id = l.product_id) end as sort_name
    from product_list_positions l left join product_documents d on d.product_id = l.product_id
    where l.list = $1::text and l.position > $2::bigint and l.position <= $2::bigint + $3::integer
    order by l.position`)

/** Positions of the whole catalogue's list a block of availability counts covers. */
export const AVAILABILITY_BLOCK = 1000
/** The block holding a position, and a block's first position, in SQL (the size written in: the statements stay fixed). */
const blockOf = (position: string) => sql.raw(`(${position} - 1) / ${AVAILABILITY_BLOCK}`)
const firstPositionOf = (block: string) => sql.raw(`${block} * ${AVAILABILITY_BLOCK} + 1`)

// Page n of `isAvailable` ($1, true or false): the products before it are counted by blocks
// (the first block whose running count passes the offset $2 holds the page's first product),
// then the availability index is walked from that block's first product, skipping at most a
// block's products, where OFFSET would skip every product before the page (9 ms at offset
// 50,000). The block's first product, at its first position, gives the sort key to start
// from: positions follow the same order as the index, lower(name) then id. The page's rows
// (its size + 1) are written into the statement: with LIMIT a parameter the planner costs the
// generic plan for a tenth of the products and plans every call anew (1,300 calls a second
// at 8 clients against 3,500–4,000 with the generic plan, at 100,000 products).
const availabilityPages = new Map<number, Statement>()
const availabilityPage = (rows: number) => availabilityPages.get(rows) ?? availabilityPages.set(rows, statement(sql`with counted as (
      select block, n, sum(n) over (order by block) as upto
      from (select block, case when $1::boolean then available else unavailable end as n from product_availability_blocks) b
    ), start as (
      select block, $2::bigint - (upto - n) as skip from counted where upto > $2::bigint order by block limit 1
    ), first as (
      select lower(p.name) as sort_name, p.id, s.skip from start s
      join product_list_positions l on l.list = '' and l.position = ${firstPositionOf('s.block')}
      join products p on p.id = l.product_id
    )
    select page.id, ${DOCUMENT_COLUMNS}, page.sort_name
    from first f cross join lateral (
      select p.id, lower(p.name) as sort_name from products p
      where p.available = $1::boolean and (lower(p.name), p.id) >= (f.sort_name, f.id)
      order by lower(p.name), p.id offset f.skip limit ${sql.raw(String(rows))}
    ) page left join product_documents d on d.product_id = page.id
    order by page.sort_name, page.id`)).get(rows)!

/**
 * Numbers every product by the list's order, 1…n, in the whole catalogue and within each
 * brand and each category, counts the catalogue's availability blocks again and leaves every
 * kept page of the list to be built again; call after products were added, renamed, removed
 * or moved between brands or categories.
 */
export async function renumberProducts (tx: Tx): Promise<void> {
  // No stock change may move a block's counts between this count and the commit: one that
  // turns a product's availability takes this table's lock first (moveAvailabilityCounts),
  // so it waits, then counts against the new positions. Taken once this transaction holds
  // every product it writes, so a stock change waiting here holds none of them.
  await tx.execute(sql`lock table product_availability_blocks in exclusive mode`)
  await tx.execute(sql`delete from product_list_positions`)
  await tx.execute(sql`insert into product_list_positions (list, position, product_id)
    select '', row_number() over (order by lower(name), id), id from products
    union all
    select 'brand:' || brand_id::text, row_number() over (partition by brand_id order by lower(name), id), id
    from products where brand_id is not null
    union all
    select 'category:' || pc.category_id::text, row_number() over (partition by pc.category_id order by lower(p.name), p.id), p.id
    from product_categories pc join products p on p.id = pc.product_id`)
  await tx.execute(sql`delete from product_availability_blocks`)
  await tx.execute(sql`insert into product_availability_blocks (block, available, unavailable)
    select ${blockOf('l.position')}, count(*) filter (where p.available), count(*) filter (where not p.available)
    from product_list_positions l join products p on p.id = l.product_id
    where l.list = '' group by 1`)
  await resetListPages(tx)
}

// The blocks are locked in their order, so two stock changes that turn products of the same
// blocks never wait for each other in a cycle.
const MOVE_AVAILABILITY_COUNTS = statement(sql`with moved as (
      select ${blockOf('l.position')} as block, sum(case when x.available then 1 else -1 end)::integer as turned
      from unnest($1::uuid[], $2::boolean[]) as x(id, available)
      join product_list_positions l on l.list = '' and l.product_id = x.id
      group by 1
    ), locked as materialized (
      select b.block from product_availability_blocks b where b.block in (select block from moved where turned <> 0)
      order by b.block for update
    )
    update product_availability_blocks b set available = b.available + m.turned, unavailable = b.unavailable - m.turned
    from moved m where b.block = m.block and b.block in (select block from locked)`)

/**
 * After a stock change turned these products' availability (each `available` now): their
 * blocks' counts. The table's lock comes first, in a statement of its own: when an import is
 * renumbering, this waits for its commit, and the update that follows reads the new positions.
 */
export async function moveAvailabilityCounts (tx: Tx, turned: ReadonlyArray<{ id: string, available: boolean }>): Promise<void> {
  if (turned.length === 0) return
  await tx.execute(sql`lock table product_availability_blocks in row exclusive mode`)
  await runStatement(tx, MOVE_AVAILABILITY_COUNTS, [`{${turned.map((t) => t.id).join(',')}}`, `{${turned.map((t) => t.available).join(',')}}`])
}

export async function countMatchingProducts (db: Tx, filters: ProductFilters): Promise<number> {
  const { query, ...others } = filters
  if (query) return (await findSearchMatches(db, query, others, { page: 1, limit: 0, offset: 0, after: null })).total
  // A numbered list's positions are 1…n without gaps: its last is its count (a category's
  // count(*) read up to 9,000 rows: 30–90 ms at 100,000 products).
  const numbered = numberedList(others)
  if (numbered !== null) {
    const [last] = await execute<{ total: number }>(db, sql`select coalesce(max(position), 0)::int as total from product_list_positions where list = ${numbered}`)
    return last!.total
  }
  const availability = availabilityList(others)
  if (availability !== null) {
    const [counted] = await execute<{ total: number }>(db, sql`select coalesce(sum(case when ${availability}::boolean then available else unavailable end), 0)::int as total from product_availability_blocks`)
    return counted!.total
  }
  const [row] = await execute<{ total: number }>(db, sql`select count(*)::int as total from products p where ${whereClause(others) ?? sql`true`}`)
  return row!.total
}

/** One product as integrators see it, rendered from its rows now (the read model's source). */
export async function findProduct (db: Tx, id: string, now = new Date()): Promise<PricedProduct | null> {
  const [row] = await execute<ProductRow>(db, sql`select ${PRODUCT_COLUMNS} from products p where p.id = ${id}`)
  return row ? toProduct(row, now) : null
}

export async function countProducts (db: Tx): Promise<number> {
  const [row] = await execute<{ n: number }>(db, sql`select count(*)::int as n from products`)
  return row!.n
}

/** A product as sent: its JSON, that JSON's entity tag, and when its sellPrice next changes. */
export interface ProductDocument { id: string, body: string, etag: string, priceChangesAt: Date | null }

export function documentOf (row: ProductRow, now: Date): ProductDocument {
  const { product, priceChangesAt } = toProduct(row, now)
  const body = JSON.stringify(product)
  return { id: row.id, body, etag: entityTag(body), priceChangesAt }
}

const uuidArray = (ids: readonly string[]) => sql`${`{${ids.join(',')}}`}::uuid[]`

/** Documents rendered now from the products' rows (nothing written); a missing product has none. */
export async function renderDocuments (db: Tx, ids: readonly string[], now: Date): Promise<ProductDocument[]> {
  if (ids.length === 0) return []
  const rows = await execute<ProductRow>(db, sql`select ${PRODUCT_COLUMNS} from products p where p.id = any(${uuidArray(ids)})`)
  return rows.map((row) => documentOf(row, now))
}

export interface DocumentRow { id: string, body: string | null, etag: string | null, changes_at: number | null }

/**
 * The documents of rows read beside them, in their order. One whose price has changed since
 * it was written (a discount started or ended and the sweep has not rewritten it yet), or
 * that is missing (written before the read model), is rendered now from the rows of the same
 * database, so a replica answers exactly too without writing anything. (mustRender states
 * the same rule in SQL.)
 */
export async function documentsOf (db: Tx, rows: DocumentRow[], now: Date): Promise<ProductDocument[]> {
  const stale = rows.filter((r) => r.body === null || (r.changes_at !== null && r.changes_at <= now.getTime())).map((r) => r.id)
  const rendered = new Map((await renderDocuments(db, stale, now)).map((d) => [d.id, d]))
  return rows.flatMap((r): ProductDocument[] => {
    const fresh = rendered.get(r.id)
    if (fresh !== undefined) return [fresh]
    if (r.body === null || stale.includes(r.id)) return []
    return [{ id: r.id, body: r.body, etag: r.etag!, priceChangesAt: r.changes_at === null ? null : new Date(r.changes_at) }]
  })
}

/**
 * documentsOf's rule as a condition on a row of products `p` left-joined to its document `d`:
 * the document must be rendered at `now` (for a statement that decides it where the rows are).
 */
export function mustRender (now: Date): SQL {
  return sql`(d.body is null or d.price_changes_at <= ${now.toISOString()}::timestamptz)`
}

const READ_DOCUMENTS = statement(sql`select d.product_id as id, ${DOCUMENT_COLUMNS} from product_documents d where d.product_id = any($1::uuid[])`)
// One product (GET /products/{id}): with an array the planner planned the statement again on
// every call (0.10 ms, more than the read's 0.08); with one id it keeps its generic plan.
const READ_DOCUMENT = statement(sql`select d.product_id as id, ${DOCUMENT_COLUMNS} from product_documents d where d.product_id = $1::uuid`)

/** The documents of products by id (GUIDs), in the order of `ids`; a product that does not exist has none. */
export async function readDocuments (db: Tx, ids: readonly string[], now = new Date()): Promise<ProductDocument[]> {
  if (ids.length === 0) return []
  const rows = ids.length === 1
    ? await runStatement<DocumentRow>(db, READ_DOCUMENT, [ids[0]])
    : await runStatement<DocumentRow>(db, READ_DOCUMENTS, [`{${ids.join(',')}}`])
  const byId = new Map(rows.map((r) => [r.id, r]))
  return documentsOf(db, ids.map((id) => byId.get(id.toLowerCase()) ?? { id: id.toLowerCase(), body: null, etag: null, changes_at: null }), now)
}

export type Grouping = 'categories' | 'brands'

/** A page of categories or brands, by name (case-insensitive) then id, with how many products each holds. */
export async function listGroupings (db: Tx, grouping: Grouping, window: ListWindow) {
  const productCount = grouping === 'categories'
    ? sql`(select count(*)::int from product_categories pc where pc.category_id = g.id)`
    : sql`(select count(*)::int from products p where p.brand_id = g.id)`
  const table = sql.raw(grouping)
  const after = window.after === null ? sql`true` : sql`(lower(g.name), g.id) > (${window.after[0]}, ${window.after[1]}::uuid)`
  const [rows, counts] = await Promise.all([
    execute<{ id: string, name: string, productCount: number, sort_name: string }>(db, sql`
      select g.id, g.name, ${productCount} as "productCount", lower(g.name) as sort_name
      from ${table} g where ${after} order by lower(g.name), g.id limit ${window.limit + 1} offset ${window.offset}`),
    execute<{ total: number }>(db, sql`select count(*)::int as total from ${table}`)
  ])
  const shown = rows.slice(0, window.limit)
  const last = shown.at(-1)
  return {
    items: shown.map(({ sort_name: _sortName, ...item }) => item),
    total: counts[0]!.total,
    next: rows.length > window.limit && last ? [last.sort_name, last.id] as SortKey : null
  }
}

// The products whose (or whose combination's) discount started or ended after their last update
// and no later than `now`, looking back `lookbackMs` at most, so both indexes on the window
// bounds serve it: `due` (product_id, at).
function dueBoundaries (now: Date, lookbackMs: number): SQL {
  // Raw SQL parameters go as text (the driver does not serialize a Date without a column type).
  const since = sql`${new Date(now.getTime() - lookbackMs).toISOString()}::timestamptz`
  const at = sql`${now.toISOString()}::timestamptz`
  return sql`with boundaries as (
      select coalesce(d.product_id, c.product_id) as product_id, greatest(
        case when d.starts_at > ${since} and d.starts_at <= ${at} then d.starts_at end,
        case when d.ends_at > ${since} and d.ends_at <= ${at} then d.ends_at end) as at
      from discounts d left join combinations c on c.id = d.combination_id
      where (d.starts_at > ${since} and d.starts_at <= ${at}) or (d.ends_at > ${since} and d.ends_at <= ${at})
    ), due as (select product_id, max(at) as at from boundaries group by product_id)`
}

/** Products whose updatedAt a discount window that opened or closed by `now` has not moved yet. */
export async function findDiscountBoundaries (db: Tx, now: Date, lookbackMs: number): Promise<string[]> {
  const rows = await execute<{ id: string }>(db, sql`${dueBoundaries(now, lookbackMs)}
    select p.id::text as id from due join products p on p.id = due.product_id where due.at > p.updated_at`)
  return rows.map((r) => r.id)
}

/**
 * Moves updated_at of those of `ids` (locked by the caller) that a discount window opened or
 * closed by `now` has not moved yet. Idempotent, so any number of instances may run it.
 * Returns the ids it moved.
 */
export async function touchDiscountBoundaries (tx: Tx, ids: readonly string[], now: Date, lookbackMs: number): Promise<string[]> {
  if (ids.length === 0) return []
  const rows = await execute<{ id: string }>(tx, sql`${dueBoundaries(now, lookbackMs)}
    update products p set updated_at = ${now.toISOString()}::timestamptz from due
    where due.product_id = p.id and due.at > p.updated_at and p.id = any(${uuidArray(ids)})
    returning p.id::text as id`)
  return rows.map((r) => r.id)
}
