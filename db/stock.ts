// Stock in SQL, and only here: the units of products and combinations, the units hold lines
// have taken, and the documents that show them (product_documents). Every order, hold,
// release, expiry, cancellation and import changes stock through this module, inside a
// transaction run by services/stock.ts. A test (test/db/stock-owner.test.ts) keeps any other
// file from writing these columns.
//
// THE LOCK ORDER. Every transaction that changes stock takes its locks in this order:
//   1. its Idempotency-Key record (claimed first; only that wait may answer idempotency_key_in_use);
//   2. the products it touches, all of them, in id order, in one go (`lockProducts`): the
//      products of the lines it orders or holds, of the reservation it consumes, releases or
//      expires, of the order it cancels, of what an import rewrites or deletes;
//   3. the order or reservations whose state it changes (their state is read again under the lock);
//   4. the stock rows of those products — combinations, products' own quantity — and hold lines;
//   5. a key's reservation count (an advisory lock);
//   6. at the refresh, when a product's availability turned: the availability blocks'
//      table (an import's renumbering holds it whole, taken after its products) and the
//      blocks' rows, in block order (db/products.ts `moveAvailabilityCounts`);
//   7. last, with the documents: the kept list pages' marks table (ROW EXCLUSIVE; a
//      renumbering holds it whole, taken after the blocks' table). The background rebuild of
//      those pages takes that table, then the pages' rows, and waits for nothing else.
// Nothing waits for a product's lock while holding a lock of steps 3–7, so no two stock writes
// can wait on each other in a circle. Rows that name what to change (a reservation's lines, an
// order's items) are read before step 2 without a lock: they never change once written.
//
// A product's document is rendered only at the end of the transaction (`refreshProducts`,
// `rewriteDocuments`), after its last stock change and while its row is locked. Under READ
// COMMITTED each statement reads as of its own start; the lock was taken by an earlier
// statement, so every change another transaction made to the product's rows (which needed the
// same lock) has committed and is seen. Rendering is never done from an older view.
import { sql } from 'drizzle-orm'
import type { Discount } from '../lib/money.ts'
import { execute, runStatement, statement, type Tx } from './client.ts'
import { insertEvents } from './events.ts'
import { markPagesOf } from './list-pages.ts'
import { PRODUCT_COLUMNS, documentOf, moveAvailabilityCounts, renderDocuments, type ProductDocument, type ProductRow } from './products.ts'

/** A set of ids as one uuid[] parameter: they passed the checks, so they hold no quote or comma. */
const uuidArray = (ids: Iterable<string>) => `{${[...ids].join(',')}}`
const uuids = (ids: Iterable<string>) => sql`${uuidArray(ids)}::uuid[]`

/** Products locked per statement when a transaction locks many (an import). */
const LOCK_CHUNK = 5000

/**
 * The products a transaction has locked (step 2): the only ones whose stock it may change and
 * whose documents it may write. Of those it asked for, the ones that were not products when
 * it locked stay out of reach for the rest of the transaction, even if an import creates them
 * meanwhile: their rows are never changed, nor their lines priced.
 */
export class ProductLocks {
  readonly #ids: Set<string>
  readonly #asked: Set<string>

  constructor (ids: Iterable<string> = [], asked: Iterable<string> = []) {
    this.#ids = new Set(ids)
    this.#asked = new Set([...asked, ...this.#ids])
  }

  /** Whether it is a product locked by this transaction. */
  has (id: string): boolean {
    return this.#ids.has(id)
  }

  /** Whether this transaction asked for its lock (locked, or no product then). */
  covers (id: string): boolean {
    return this.#asked.has(id)
  }

  get ids (): string[] {
    return [...this.#ids]
  }

  /**
   * Products this transaction has just inserted: no other transaction can see them before it
   * commits, so they are as good as locked.
   */
  adoptCreated (ids: Iterable<string>): void {
    for (const id of ids) {
      this.#ids.add(id.toLowerCase())
      this.#asked.add(id.toLowerCase())
    }
  }
}

const LOCK_PRODUCTS = statement(sql`select id::text as id from products where id = any($1::uuid[]) order by id for no key update`)
const LOCK_PRODUCTS_FOR_DELETE = statement(sql`select id::text as id from products where id = any($1::uuid[]) order by id for update`)

/**
 * Step 2: locks the products, in id order. `forDelete` takes the stronger lock an import needs
 * (it may delete them); either kind excludes the other and itself.
 */
export async function lockProducts (tx: Tx, ids: Iterable<string>, options: { forDelete?: boolean } = {}): Promise<ProductLocks> {
  const sorted = [...new Set([...ids].map((id) => id.toLowerCase()))].sort()
  const locked: string[] = []
  for (let i = 0; i < sorted.length; i += LOCK_CHUNK) {
    const rows = await runStatement<{ id: string }>(tx, options.forDelete === true ? LOCK_PRODUCTS_FOR_DELETE : LOCK_PRODUCTS, [uuidArray(sorted.slice(i, i + LOCK_CHUNK))])
    for (const row of rows) locked.push(row.id)
  }
  return new ProductLocks(locked, sorted)
}

/**
 * Locks, without waiting, up to `limit` products whose document is stale (its price changed at
 * or before `now`) or missing; those another transaction holds are left to the next run.
 */
export async function lockProductsToRender (tx: Tx, now: Date, limit: number, options: { missing: boolean }): Promise<ProductLocks> {
  const rows = await execute<{ id: string }>(tx, options.missing
    ? sql`select p.id::text as id from products p where not exists (select 1 from product_documents d where d.product_id = p.id)
          order by p.id limit ${limit} for no key update of p skip locked`
    : sql`select p.id::text as id from product_documents d join products p on p.id = d.product_id
          where d.price_changes_at <= ${now.toISOString()}::timestamptz order by p.id limit ${limit} for no key update of p skip locked`)
  return new ProductLocks(rows.map((r) => r.id))
}

/** Locks, without waiting, those of `ids` no other transaction holds. */
export async function lockFreeProducts (tx: Tx, ids: readonly string[]): Promise<ProductLocks> {
  if (ids.length === 0) return new ProductLocks()
  const rows = await execute<{ id: string }>(tx, sql`select id::text as id from products where id = any(${uuids(ids)})
    order by id for no key update skip locked`)
  return new ProductLocks(rows.map((r) => r.id))
}

function mustHold (locks: ProductLocks, productIds: Iterable<string>): void {
  for (const id of productIds) {
    // A programming error, not a request's: stock changed outside the lock order could deadlock or render stale.
    if (!locks.covers(id)) throw new Error(`stock of product ${id} changed without its lock`)
  }
}

/** A product or one of its combinations, as an order line sees it. */
export interface SellableRow {
  product_id: string
  combination_id: string | null
  name: string
  option_names: string[] | null
  price: string
  /** Its own discount, else (for a combination) its product's. */
  discount: Discount | null
  quantity: number | null
  is_available: boolean
  /** For a product row: whether it has combinations (then one must be chosen). */
  has_combinations: boolean
  /** For a combination row: the product it belongs to, and whether that product is available. */
  owner_id: string | null
  owner_available: boolean | null
}

// The stock statements take their ids as arrays, and for those PostgreSQL's plan cache kept
// choosing custom plans: every call planned again, prepared or not (the documents' query: about
// 0.25 ms of planning against 0.15 ms of execution). Their generic plans are the same index
// scans. Set for the transaction only (behind a pooler too); lock_sellables carries its own.
const GENERIC_PLANS = statement(sql`select set_config('plan_cache_mode', 'force_generic_plan', true)`)

/** Makes the rest of the transaction keep its statements' generic plans. */
export function keepGenericPlans (tx: Tx): Promise<unknown> {
  return runStatement(tx, GENERIC_PLANS, [])
}

/** Sellable rows by `p:<product id>` and `c:<combination id>`. */
export type Sellables = Map<string, SellableRow>

// Statements of the order path are rendered once, at load: their text never changes with the
// order (the lines go as array parameters) and nothing is built per call. Directly on
// PostgreSQL postgres.js prepares each once per connection; behind a transaction pooler
// (nothing prepared) the plans of the functions they call (lock_sellables, take_stock) stay
// cached for the life of each server connection.
const LOCK_SELLABLES = statement(sql`select * from lock_sellables($1::uuid[], $2::uuid[], $3::boolean)`)

/**
 * Every product and combination the lines name, in one round trip. With `lock`, the products
 * are locked first (step 2 of the lock order) and read after it, so what the rows show of
 * stock is exact until the transaction ends; a product that was none then is left out.
 */
export async function loadSellables (tx: Tx, productIds: string[], combinationIds: string[], lock: boolean): Promise<{ sellables: Sellables, locks: ProductLocks | null }> {
  const rows = await runStatement<SellableRow>(tx, LOCK_SELLABLES, [uuidArray(productIds), uuidArray(combinationIds), lock])
  const sellables: Sellables = new Map(rows.map((r) => [r.combination_id ? `c:${r.combination_id}` : `p:${r.product_id}`, r]))
  return { sellables, locks: lock ? new ProductLocks(rows.filter((r) => r.combination_id === null).map((r) => r.product_id), productIds) : null }
}

export type StockOwner = 'products' | 'combinations'

/** Units taken from (or given back to) a product's or a combination's tracked stock. */
export interface StockMove { owner: StockOwner, id: string, productId: string, quantity: number }

const TAKE_STOCK = statement(sql`select take_stock($1::uuid[], $2::integer[], $3::boolean[]) as failed`)

/**
 * Takes each entry's units when at least that many are left, in one round trip (take_stock, a
 * PL/pgSQL function whose plans each server connection keeps, pooler or not). The caller has
 * checked the stock under the products' locks, so every decrement succeeds; the condition is
 * kept so that a bug can never oversell. Returns the index of the first entry not taken, or null.
 */
export async function takeStock (tx: Tx, locks: ProductLocks, takes: readonly StockMove[]): Promise<number | null> {
  if (takes.length === 0) return null
  mustHold(locks, takes.map((t) => t.productId))
  const [row] = await runStatement<{ failed: number }>(tx, TAKE_STOCK, [
    uuidArray(takes.map((t) => t.id)),
    `{${takes.map((t) => t.quantity).join(',')}}`,
    `{${takes.map((t) => t.owner === 'combinations').join(',')}}`
  ])
  return row!.failed === 0 ? null : row!.failed - 1
}

/**
 * Adding the units of `back` (id, product_id, units, combination) back to stock rows still
 * tracked, of the products they were taken from; `p` and `c` name the products they changed.
 */
const GIVE_BACK = sql.raw(`
    p as (update products set quantity = products.quantity + back.units from back
          where not back.combination and products.id = back.id and products.quantity is not null returning products.id),
    c as (update combinations set quantity = combinations.quantity + back.units from back
          where back.combination and combinations.id = back.id and combinations.product_id = back.product_id
            and combinations.quantity is not null returning combinations.product_id as id)`)

/**
 * Gives units back to their stock rows; returns the products whose stock moved. Rows gone or
 * untracked since take nothing, nor do products that were gone when the transaction locked them.
 */
export async function giveBack (tx: Tx, locks: ProductLocks, moves: readonly StockMove[]): Promise<string[]> {
  const perRow = new Map<string, StockMove>()
  for (const move of moves) {
    if (move.quantity <= 0) continue
    mustHold(locks, [move.productId])
    if (!locks.has(move.productId)) continue
    const entry = perRow.get(move.id) ?? { ...move, quantity: 0 }
    entry.quantity += move.quantity
    perRow.set(move.id, entry)
  }
  if (perRow.size === 0) return []
  const rows = [...perRow.values()]
  const moved = await execute<{ id: string }>(tx, sql`with back as (
      select * from unnest(${uuids(rows.map((r) => r.id))}, ${uuids(rows.map((r) => r.productId))}, ${`{${rows.map((r) => r.quantity).join(',')}}`}::integer[],
        ${`{${rows.map((r) => r.owner === 'combinations').join(',')}}`}::boolean[]) as back(id, product_id, units, combination)
    ), ${GIVE_BACK}
    select id::text as id from p union select id::text from c`)
  return moved.map((r) => r.id)
}

/** A hold line as stored: what it holds of its stock row (0 when untracked, or for a test key). */
export interface HoldLine { productId: string, combinationId: string | null, quantity: number, held: number }

/** Writes a new reservation's lines with the units each holds (taken from stock just before). */
export async function insertHoldLines (tx: Tx, locks: ProductLocks, reservationId: string, lines: readonly HoldLine[]): Promise<void> {
  mustHold(locks, lines.filter((l) => l.held > 0).map((l) => l.productId))
  const rows = lines.map((l, line) => ({ line, product_id: l.productId, combination_id: l.combinationId, quantity: l.quantity, held: l.held }))
  await tx.execute(sql`insert into reservation_items (reservation_id, line, product_id, combination_id, quantity, held)
    select ${reservationId}::uuid, line, product_id, combination_id, quantity, held
    from json_to_recordset(${JSON.stringify(rows)}::json) as x(line integer, product_id uuid, combination_id uuid, quantity integer, held integer)`)
}

// A hold's lines freed ($1: the reservations), returning what each held (a self-join reads the
// value before the update). With GIVE_BACK_HELD, those units go back to their stock rows, for
// the products this transaction locked ($2).
const FREED = sql.raw(`freed as (
      update reservation_items i set held = 0 from reservation_items o
      where i.reservation_id = any($1::uuid[]) and i.held > 0 and o.reservation_id = i.reservation_id and o.line = i.line
      returning i.product_id, i.combination_id, o.held
    )`)
const SOLD_HELD = statement(sql`with ${FREED} select coalesce(json_agg(distinct product_id::text), '[]') as freed, '[]'::json as moved from freed`)
const GIVE_BACK_HELD = statement(sql`with ${FREED}, back as (
      select coalesce(combination_id, product_id) as id, product_id, sum(held)::int as units, combination_id is not null as combination
      from freed where product_id = any($2::uuid[]) group by 1, 2, 4
    ), ${GIVE_BACK}, moved as (select id from p union select id from c)
    select coalesce((select json_agg(distinct product_id::text) from freed), '[]') as freed,
      coalesce((select json_agg(id::text) from moved), '[]') as moved`)

/**
 * Ends what the reservations hold, in one statement. `giveBack`: the units go back to their
 * stock rows (a release, an expiry); otherwise they are sold (an order consumed the hold).
 * Returns the products whose stock moved.
 */
export async function freeHeld (tx: Tx, locks: ProductLocks, reservationIds: readonly string[], options: { giveBack: boolean }): Promise<string[]> {
  if (reservationIds.length === 0) return []
  const [row] = options.giveBack
    ? await runStatement<{ freed: string[], moved: string[] }>(tx, GIVE_BACK_HELD, [uuidArray(reservationIds), uuidArray(locks.ids)])
    : await runStatement<{ freed: string[], moved: string[] }>(tx, SOLD_HELD, [uuidArray(reservationIds)])
  // Lines of products outside the lock order were changed: the transaction must not commit.
  mustHold(locks, row!.freed)
  return row!.moved
}

/** An order line as stored, with the units it took from stock. */
export interface TakenLine { productId: string, combinationId: string | null, taken: number }

/**
 * Gives an order's taken units back (it was cancelled). Lines stored before `taken` was
 * recorded count their quantity for a live order. Returns the products whose stock moved.
 */
export async function giveBackOrder (tx: Tx, locks: ProductLocks, orderId: string): Promise<string[]> {
  const lines = await execute<TakenLine>(tx, sql`select i.product_id::text as "productId", i.combination_id::text as "combinationId",
      coalesce(i.taken, case when o.mode = 'live' then i.quantity else 0 end) as taken
    from order_items i join orders o on o.id = i.order_id where i.order_id = ${orderId}::uuid`)
  return giveBack(tx, locks, lines.map((l) => ({
    owner: l.combinationId ? 'combinations' : 'products',
    id: l.combinationId ?? l.productId,
    productId: l.productId,
    quantity: l.taken
  })))
}

/** What an import's file says of one product's stock: its own (null when it has combinations or none is tracked) and each combination's. */
export interface ImportedStock { productId: string, quantity: number | null, combinations: Array<{ id: string, quantity: number | null }> }

/** The file's quantity is the stock: sets it on the products an import wrote and their combinations. */
export async function setImportedStock (tx: Tx, locks: ProductLocks, stock: readonly ImportedStock[]): Promise<void> {
  if (stock.length === 0) return
  mustHold(locks, stock.map((s) => s.productId.toLowerCase()))
  const products = stock.map((s) => ({ id: s.productId, quantity: s.quantity }))
  const combinations = stock.flatMap((s) => s.combinations)
  await tx.execute(sql`with p as (
      update products set quantity = x.quantity from jsonb_to_recordset(${JSON.stringify(products)}::jsonb) as x(id uuid, quantity integer)
      where products.id = x.id and products.quantity is distinct from x.quantity
    )
    update combinations set quantity = x.quantity from jsonb_to_recordset(${JSON.stringify(combinations)}::jsonb) as x(id uuid, quantity integer)
    where combinations.id = x.id and combinations.quantity is distinct from x.quantity`)
}

/**
 * After an import set the stock of `productIds` from its file: the active holds on those rows
 * are taken from it again. Older holds keep their units first; when the file has fewer units
 * than are held, the newest holds keep fewer (their `held` shrinks) and the stock shows 0,
 * never less. Returns the products whose stock moved.
 */
export async function reapplyHolds (tx: Tx, locks: ProductLocks, productIds: readonly string[]): Promise<string[]> {
  if (productIds.length === 0) return []
  const rows = await execute<{ product_id: string }>(tx, sql`
    with lines as (
      select i.reservation_id, i.line, i.product_id, i.combination_id, i.quantity,
        coalesce(i.combination_id, i.product_id) as stock_id,
        sum(i.quantity) over (partition by coalesce(i.combination_id, i.product_id) order by r.created_at, r.id, i.line) as upto
      from reservation_items i join reservations r on r.id = i.reservation_id
      where r.status = 'active' and r.mode = 'live' and i.product_id = any(${uuids(productIds)})
    ), stock as (
      select id, quantity from products where id in (select stock_id from lines where combination_id is null)
      union all
      -- A combination counts only under the product the hold named (the file may have moved it).
      select c.id, c.quantity from combinations c where exists (select 1 from lines l where l.stock_id = c.id and l.product_id = c.product_id)
    ), kept as (
      select l.reservation_id, l.line, l.product_id, l.combination_id, l.stock_id,
        case when s.quantity is null then 0 else least(l.quantity, greatest(s.quantity - (l.upto - l.quantity), 0)) end as held
      from lines l left join stock s on s.id = l.stock_id
    ), per_row as (
      select stock_id, combination_id is not null as is_combination, sum(held)::int as held from kept group by stock_id, combination_id is not null
    ), items as (
      update reservation_items i set held = kept.held from kept
      where i.reservation_id = kept.reservation_id and i.line = kept.line and i.held is distinct from kept.held
    ), p as (
      update products set quantity = quantity - per_row.held from per_row
      where products.id = per_row.stock_id and not per_row.is_combination and per_row.held > 0
    ), c as (
      update combinations set quantity = quantity - per_row.held from per_row
      where combinations.id = per_row.stock_id and per_row.is_combination and per_row.held > 0
    )
    select distinct product_id::text as product_id from kept`)
  const moved = rows.map((r) => r.product_id)
  mustHold(locks, moved)
  return moved
}

const REFRESH = statement(sql`with before as (
      select id, available from products where id = any($1::uuid[])
    ), refreshed as (
      update products p set updated_at = $2::timestamptz, content_hash = null,
        available = p.is_available and case
          when exists (select 1 from combinations c where c.product_id = p.id)
            then exists (select 1 from combinations c where c.product_id = p.id and c.is_available and (c.quantity is null or c.quantity > 0))
          else p.quantity is null or p.quantity > 0 end
      where p.id = any($1::uuid[])
      returning p.id, p.name, p.sku, p.barcode, p.quantity, p.price, p.is_available, p.available, p.image_url, p.brand_id, p.updated_at),
    events as (${insertEvents({ type: 'product.updated', resourceId: sql`id`, from: sql`refreshed` })})
    select ${PRODUCT_COLUMNS}, b.available as was_available from refreshed p join before b on b.id = p.id`)

/**
 * After the transaction's last stock change to these products: whether each can still be
 * ordered, its updated_at and its `product.updated` event, in one statement, which also
 * returns what their documents are rendered from (RETURNING gives the new row; its children
 * are read in the same statement); answers the documents, for `writeDocuments`. Rendering in
 * SQL would spare that second statement but keep the money rules (sellPrice, rounding) twice,
 * in SQL and in lib/money.ts. The content hash is cleared, so the next import counts as a
 * change even if the file is the same (it puts the stock back).
 */
export async function refreshProducts (tx: Tx, locks: ProductLocks, productIds: readonly string[], now: Date): Promise<ProductDocument[]> {
  if (productIds.length === 0) return []
  mustHold(locks, productIds)
  const rows = await runStatement<ProductRow & { was_available: boolean }>(tx, REFRESH, [uuidArray(productIds), now.toISOString()])
  await moveAvailabilityCounts(tx, rows.filter((row) => row.available !== row.was_available))
  return rows.map((row) => documentOf(row, now))
}

const REWRITE_BATCH = 500

/**
 * Renders the products' documents again from their rows and writes them: after an import
 * wrote them, or their price changed (a discount started or ended). Their rows are locked.
 */
export async function rewriteDocuments (tx: Tx, locks: ProductLocks, productIds: readonly string[], now: Date): Promise<void> {
  mustHold(locks, productIds)
  for (let i = 0; i < productIds.length; i += REWRITE_BATCH) {
    await writeDocuments(tx, locks, await renderDocuments(tx, productIds.slice(i, i + REWRITE_BATCH), now))
  }
}

// The documents, and the marks of the kept list pages that show them (db/list-pages.ts).
const WRITE_DOCUMENTS = statement(sql`with x as (
      select * from json_to_recordset($1::json) as x(product_id uuid, body text, etag text, price_changes_at timestamptz)
    ), written as (
      insert into product_documents as d (product_id, body, etag, price_changes_at)
      select product_id, body, etag, price_changes_at from x
      on conflict (product_id) do update set body = excluded.body, etag = excluded.etag, price_changes_at = excluded.price_changes_at
    )
    ${markPagesOf(sql`select product_id from x`)}`)

/** Writes documents of locked products (rendered by refreshProducts, or renderDocuments), marking the kept pages that show them. */
export async function writeDocuments (tx: Tx, locks: ProductLocks, documents: readonly ProductDocument[]): Promise<void> {
  if (documents.length === 0) return
  mustHold(locks, documents.map((d) => d.id))
  const rows = documents.map((d) => ({ product_id: d.id, body: d.body, etag: d.etag, price_changes_at: d.priceChangesAt?.toISOString() ?? null }))
  await runStatement(tx, WRITE_DOCUMENTS, [JSON.stringify(rows)])
}
