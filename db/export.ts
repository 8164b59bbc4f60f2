// Exports in SQL: the start of an export's snapshot transaction (its slot, the feed position
// it is joined to), and one cursor over the rows it sends, read a batch at a time.
//
// Everything here runs inside Database.snapshot: one READ ONLY, REPEATABLE READ transaction,
// whose first statement takes the snapshot every later FETCH reads. A cursor declared
// without HOLD lives only in its transaction, which is what a transaction pooler keeps on one
// server connection; rows are produced as they are fetched, so the database never holds the
// whole result, and a read-only snapshot takes no lock a writer waits for.
import { sql, type SQL } from 'drizzle-orm'
import { execute, runRaw, statement, type Tx } from './client.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import { mustRender } from './products.ts'
import { whereClause, type ProductFilters } from './product-filters.ts'
import { selectOrderDocuments, type OrderFilters } from './orders.ts'
import { searchMatches } from './search.ts'

const CURSOR = sql.raw('export_rows')

export interface ExportStart {
  /** Whether a slot was free (always, without `slots`). */
  slot: boolean
  /** The last feed position the snapshot holds: every event after it is of a change the snapshot may not show. */
  position: number
}

/**
 * The first statement of an export's transaction, which takes its snapshot. It turns the
 * idle-in-transaction timeout off for this transaction alone (the transaction waits on the
 * client between batches, however slowly it reads; the idle disconnect ends it), takes one of
 * the key's `slots` advisory locks when given (held until the transaction ends, on every
 * instance alike), and reads the last published feed position.
 *
 * Why that position joins the export to the feed: positions are given out by one publisher
 * transaction at a time, each after the previous one committed, and each stamps only events
 * already committed. So the positions a snapshot sees are exactly 1…P, every one of them for a
 * change committed before the snapshot (which it shows), and every event it does not see a
 * position of, including one committed before the snapshot but not yet published, gets a
 * position above P. A reader that follows the feed after P misses nothing; it may see again a
 * change the export already shows (committed before the snapshot, published after it).
 */
export async function startExport (tx: Tx, options: { apiKeyId: string, slots: number | null }): Promise<ExportStart> {
  const { apiKeyId, slots } = options
  // CASE tries the slots in order and stops at the first one taken: at most one lock held.
  const slot = slots === null
    ? sql`true`
    : sql`case ${sql.join(Array.from({ length: slots }, (_, i) => sql`when pg_try_advisory_xact_lock(${ADVISORY_LOCKS.exportSlot}, hashtext(${`${apiKeyId}:${i}`})) then true`), sql` `)} else false end`
  const [row] = await execute<{ slot: boolean, position: string }>(tx, sql`
    select set_config('idle_in_transaction_session_timeout', '0', true) as idle_timeout, ${slot} as slot,
      coalesce((select max(position) from change_events), 0)::text as position`)
  return { slot: row!.slot, position: Number(row!.position) }
}

/**
 * A row of an export's cursor: the line as it is stored or built by the statement, passed on
 * as it is, or (`renderId`) the id of a record the app must render instead (a product whose
 * document is stale at the export's time, an order whose bytes the statement cannot promise).
 */
export interface ExportRow { body: string | Buffer | null, renderId: string | null }

/**
 * Declares the cursor over the products `filters` select, in the list's order: each row its
 * stored document and, for one that is stale at `now`, the product's id to render it by.
 */
export async function declareProductRows (tx: Tx, filters: ProductFilters, now: Date): Promise<void> {
  const { query, ...others } = filters
  const columns = sql`d.body, case when ${mustRender(now)} then p.id end as render_id`
  const rows = query
    ? sql`select ${columns} from (${searchMatches(query, others)}) m join products p on p.id = m.id
          left join product_documents d on d.product_id = p.id order by m.sort_name, m.id`
    : sql`select ${columns} from products p left join product_documents d on d.product_id = p.id
          where ${whereClause(others) ?? sql`true`} order by lower(p.name), p.id`
  await declare(tx, rows)
}

/** Declares the cursor over the key's orders `filters` select, newest first: each row GET order's body, or the id to render it by. */
export async function declareOrderRows (tx: Tx, apiKeyId: string, filters: OrderFilters): Promise<void> {
  await declare(tx, selectOrderDocuments(apiKeyId, filters))
}

async function declare (tx: Tx, rows: SQL): Promise<void> {
  await tx.execute(sql`declare ${CURSOR} no scroll cursor for ${rows}`)
}

const fetchForward = (count: number) => sql`fetch forward ${sql.raw(String(Math.trunc(count)))} from ${CURSOR}`

/** The next `count` rows of the declared cursor (fewer, none, at its end), decoded. */
export async function fetchRows (tx: Tx, count: number): Promise<ExportRow[]> {
  const rows = await execute<{ body: string | null, render_id: string | null }>(tx, fetchForward(count))
  return rows.map((r) => ({ body: r.body, renderId: r.render_id }))
}

/**
 * The next `count` rows of the declared cursor with each line left as the bytes PostgreSQL
 * sent (PostgreSQL only): an export passes it on without decoding it into text.
 */
export async function fetchRawRows (tx: Tx, count: number): Promise<ExportRow[]> {
  const rows = await runRaw(tx, statement(fetchForward(count)))
  return rows.map(([body, renderId]) => ({ body: body ?? null, renderId: renderId == null ? null : renderId.toString('latin1') }))
}
