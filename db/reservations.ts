// Stock reservations in SQL: a hold's rows, the key's active count, giving held units back,
// the expiry sweep's claim, consumption by an order, and holds kept across a catalogue import.
// Lock order everywhere: the reservation row, then its items, then stock rows in id order
// (as orders take them), so holds, releases, expiries, orders and imports never deadlock.
import { sql } from 'drizzle-orm'
import type { OrderMode } from '../schemas/orders.ts'
import { execute, type Tx } from './client.ts'
import { refreshProductState } from './products.ts'
import type { ReservationStatus } from '../schemas/reservations.ts'

export interface ReservationItem { productId: string, combinationId: string | null, quantity: number }

export interface ReservationRecord {
  id: string
  status: ReservationStatus
  items: ReservationItem[]
  expiresAt: string
  createdAt: string
  orderId: string | null
}

/** A line as stored: what it holds from its stock row (0 when untracked or for a test key). */
export interface HeldLine extends ReservationItem { held: number }

interface RawReservation {
  id: string
  status: ReservationStatus
  expires_at: string
  created_at: string
  order_id: string | null
  items: ReservationItem[]
}

const RESERVATION_COLUMNS = sql`r.id, r.status, to_json(r.expires_at) as expires_at, to_json(r.created_at) as created_at, r.order_id,
  coalesce((select json_agg(json_build_object('productId', i.product_id, 'combinationId', i.combination_id, 'quantity', i.quantity) order by i.line)
    from reservation_items i where i.reservation_id = r.id), '[]'::json) as items`

function toRecord (row: RawReservation): ReservationRecord {
  return {
    id: row.id,
    status: row.status,
    items: row.items,
    expiresAt: new Date(row.expires_at).toISOString(),
    createdAt: new Date(row.created_at).toISOString(),
    orderId: row.order_id
  }
}

/** How many active reservations the key has, counted while no other hold of the key can add one. */
export async function lockAndCountActive (tx: Tx, apiKeyId: string): Promise<number> {
  // A transaction lock per key: two holds of one key never both see 99. Other keys never wait on it.
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('reservations:' || ${apiKeyId}, 0))`)
  return countActive(tx, apiKeyId)
}

export async function countActive (tx: Tx, apiKeyId: string): Promise<number> {
  const [row] = await execute<{ n: number }>(tx, sql`select count(*)::int as n from reservations where api_key_id = ${apiKeyId}::uuid and status = 'active'`)
  return row!.n
}

export interface NewReservation {
  apiKeyId: string
  mode: OrderMode
  expiresAt: Date
  lines: HeldLine[]
}

export async function insertReservation (tx: Tx, reservation: NewReservation, now: Date): Promise<ReservationRecord> {
  const id = crypto.randomUUID()
  const at = sql`${now.toISOString()}::timestamptz`
  const items = reservation.lines.map((l, line) => sql`(${id}::uuid, ${line}, ${l.productId}::uuid, ${l.combinationId}::uuid, ${l.quantity}, ${l.held})`)
  const [row] = await execute<RawReservation>(tx, sql`
    with r as (
      insert into reservations (id, api_key_id, mode, status, expires_at, created_at, updated_at)
      values (${id}::uuid, ${reservation.apiKeyId}::uuid, ${reservation.mode}, 'active', ${reservation.expiresAt.toISOString()}::timestamptz, ${at}, ${at})
      returning *
    ), lines as (
      insert into reservation_items (reservation_id, line, product_id, combination_id, quantity, held) values ${sql.join(items, sql`, `)}
    )
    select r.id, r.status, to_json(r.expires_at) as expires_at, to_json(r.created_at) as created_at, r.order_id,
      ${JSON.stringify(reservation.lines.map(({ productId, combinationId, quantity }) => ({ productId, combinationId, quantity })))}::json as items
    from r`)
  return toRecord(row!)
}

/** The key's reservation, or null when it has none with that id. */
export async function findReservationForKey (db: Tx, apiKeyId: string, id: string): Promise<ReservationRecord | null> {
  const [row] = await execute<RawReservation>(db, sql`select ${RESERVATION_COLUMNS} from reservations r where r.id = ${id}::uuid and r.api_key_id = ${apiKeyId}::uuid`)
  return row ? toRecord(row) : null
}

export interface LockedReservation {
  id: string
  status: ReservationStatus
  /** Its expiresAt has passed (it may not be swept yet). */
  lapsed: boolean
  lines: HeldLine[]
}

/** The key's reservation with its lines, its row and its items locked until the transaction ends. */
export async function lockReservation (tx: Tx, apiKeyId: string, id: string, now: Date): Promise<LockedReservation | null> {
  const [row] = await execute<{ id: string, status: ReservationStatus, lapsed: boolean }>(tx, sql`
    select id, status, expires_at <= ${now.toISOString()}::timestamptz as lapsed from reservations
    where id = ${id}::uuid and api_key_id = ${apiKeyId}::uuid for update`)
  if (!row) return null
  return { ...row, lines: await lockLines(tx, [row.id]) }
}

async function lockLines (tx: Tx, reservationIds: string[]): Promise<HeldLine[]> {
  if (reservationIds.length === 0) return []
  // FOR UPDATE reads the latest committed held, after an import that shrank it.
  return execute<HeldLine>(tx, sql`
    select product_id as "productId", combination_id as "combinationId", quantity, held from reservation_items
    where reservation_id in (${sql.join(reservationIds.map((id) => sql`${id}::uuid`), sql`, `)})
    order by reservation_id, line for update`)
}

/**
 * Gives the lines' held units back to their stock rows, one row at a time in id order (as an
 * order takes them), and refreshes the products whose stock moved. Rows gone or untracked
 * since take nothing back.
 */
export async function giveBack (tx: Tx, lines: HeldLine[], now: Date): Promise<string[]> {
  const perRow = new Map<string, { owner: 'products' | 'combinations', quantity: number, productId: string }>()
  for (const line of lines) {
    if (line.held === 0) continue
    const id = line.combinationId ?? line.productId
    const entry = perRow.get(id) ?? { owner: line.combinationId ? 'combinations' : 'products', quantity: 0, productId: line.productId }
    entry.quantity += line.held
    perRow.set(id, entry)
  }
  const moved = new Set<string>()
  for (const [id, { owner, quantity, productId }] of [...perRow.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const updated = await execute<{ id: string }>(tx, sql`update ${sql.raw(owner)} set quantity = quantity + ${quantity}
      where id = ${id}::uuid and quantity is not null returning id`)
    if (updated.length > 0) moved.add(productId)
  }
  const products = [...moved]
  await refreshProductState(tx, products, now)
  return products
}

/** Ends an active reservation (released, expired or consumed by `orderId`). */
export async function endReservation (tx: Tx, id: string, status: Exclude<ReservationStatus, 'active'>, now: Date, orderId: string | null = null): Promise<void> {
  await execute(tx, sql`update reservations set status = ${status}, order_id = ${orderId}::uuid, updated_at = ${now.toISOString()}::timestamptz
    where id = ${id}::uuid`)
  // Nothing is held any more: an import after this must not count these units.
  await execute(tx, sql`update reservation_items set held = 0 where reservation_id = ${id}::uuid and held > 0`)
}

/**
 * Claims up to `limit` active reservations past their expiresAt that no other transaction
 * holds (another instance's sweep, a release, an order consuming one), with their lines.
 */
export async function claimLapsed (tx: Tx, now: Date, limit: number): Promise<{ ids: string[], lines: HeldLine[] }> {
  const rows = await execute<{ id: string }>(tx, sql`select id from reservations
    where status = 'active' and expires_at <= ${now.toISOString()}::timestamptz
    order by expires_at limit ${limit} for update skip locked`)
  const ids = rows.map((r) => r.id)
  return { ids, lines: await lockLines(tx, ids) }
}

export async function expireReservations (tx: Tx, ids: string[], now: Date): Promise<void> {
  if (ids.length === 0) return
  const list = sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)
  await execute(tx, sql`update reservations set status = 'expired', updated_at = ${now.toISOString()}::timestamptz where id in (${list})`)
  await execute(tx, sql`update reservation_items set held = 0 where reservation_id in (${list}) and held > 0`)
}

/** Every live hold's lines, locked: an import takes them before it writes any stock row. */
export async function lockActiveHolds (tx: Tx): Promise<void> {
  await tx.execute(sql`select 1 from reservation_items i join reservations r on r.id = i.reservation_id
    where r.status = 'active' and r.mode = 'live' for update of i`)
}

/**
 * After an import wrote stock rows from its file (products written at `now`, with their
 * combinations): the file's quantity is the stock, so the active holds on those rows are
 * taken from it again. Older holds keep their units first; when the file has fewer units than
 * are held, the newest holds keep fewer (their `held` shrinks) and the stock shows 0, never less.
 */
export async function reapplyHolds (tx: Tx, now: Date): Promise<void> {
  const rows = await execute<{ product_id: string }>(tx, sql`
    with written as (
      select id from products where updated_at = ${now.toISOString()}::timestamptz and content_hash is not null
    ), lines as (
      select i.reservation_id, i.line, i.product_id, i.combination_id, i.quantity,
        coalesce(i.combination_id, i.product_id) as stock_id,
        sum(i.quantity) over (partition by coalesce(i.combination_id, i.product_id) order by r.created_at, r.id, i.line) as upto
      from reservation_items i join reservations r on r.id = i.reservation_id
      where r.status = 'active' and r.mode = 'live' and i.product_id in (select id from written)
    ), stock as (
      select id, quantity from products where id in (select stock_id from lines where combination_id is null)
      union all
      select id, quantity from combinations where id in (select stock_id from lines where combination_id is not null)
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
    select distinct product_id from kept`)
  // Their availability follows the stock they show; their content hash is cleared, so the same
  // file imported again puts the stock back and takes the holds from it again.
  await refreshProductState(tx, rows.map((r) => r.product_id), now)
}

/** Active holds across every key: how many reservations and units (for the metrics). */
export async function activeHoldTotals (db: Tx): Promise<{ reservations: number, units: number }> {
  const [row] = await execute<{ reservations: number, units: number }>(db, sql`
    select count(distinct r.id)::int as reservations, coalesce(sum(i.held), 0)::int as units
    from reservations r left join reservation_items i on i.reservation_id = r.id where r.status = 'active'`)
  return row!
}
