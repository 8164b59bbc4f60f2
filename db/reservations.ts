// Stock reservations in SQL: a hold's row, the key's active count, its lookups, its status
// (released, expired, consumed) and the expiry sweep's candidates. What a hold's lines take
// from stock, and give back, is db/stock.ts's: the lines are written and freed there.
import { sql } from 'drizzle-orm'
import type { OrderMode } from '../schemas/orders.ts'
import type { ReservationStatus } from '../schemas/reservations.ts'
import { execute, runStatement, statement, type Tx } from './client.ts'

export interface ReservationItem { productId: string, combinationId: string | null, quantity: number }

export interface ReservationRecord {
  id: string
  status: ReservationStatus
  items: ReservationItem[]
  expiresAt: string
  createdAt: string
  orderId: string | null
}

interface RawReservation {
  id: string
  status: ReservationStatus
  expires_at: string
  created_at: string
  order_id: string | null
  items: ReservationItem[]
}

const uuids = (ids: readonly string[]) => sql`${`{${ids.join(',')}}`}::uuid[]`

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

const LOCK_KEY_HOLDS = statement(sql`select pg_advisory_xact_lock(hashtextextended('reservations:' || $1::text, 0))`)
const COUNT_ACTIVE = statement(sql`select count(*)::int as n from reservations where api_key_id = $1::uuid and status = 'active'`)

/** How many active reservations the key has (a look without the key's lock). */
export async function countActive (tx: Tx, apiKeyId: string): Promise<number> {
  return (await runStatement<{ n: number }>(tx, COUNT_ACTIVE, [apiKeyId]))[0]!.n
}

/**
 * How many active reservations the key has, counted while no other hold of the key can add
 * one: a transaction lock per key, so two holds of one key never both see 99, and other keys
 * never wait on it. Two statements sent together: the count is a statement of its own, so it
 * reads after the lock is granted.
 */
export async function lockAndCountActive (tx: Tx, apiKeyId: string): Promise<number> {
  const locked = runStatement(tx, LOCK_KEY_HOLDS, [apiKeyId])
  const counted = runStatement<{ n: number }>(tx, COUNT_ACTIVE, [apiKeyId])
  await locked
  return (await counted)[0]!.n
}

export interface NewReservation {
  id: string
  apiKeyId: string
  mode: OrderMode
  expiresAt: Date
  items: ReservationItem[]
}

/** Writes an active reservation's row (its lines are the stock's: db/stock.ts insertHoldLines). */
export async function insertReservation (tx: Tx, reservation: NewReservation, now: Date): Promise<ReservationRecord> {
  const at = sql`${now.toISOString()}::timestamptz`
  const [row] = await execute<Omit<RawReservation, 'items'>>(tx, sql`
    insert into reservations (id, api_key_id, mode, status, expires_at, created_at, updated_at)
    values (${reservation.id}::uuid, ${reservation.apiKeyId}::uuid, ${reservation.mode}, 'active', ${reservation.expiresAt.toISOString()}::timestamptz, ${at}, ${at})
    returning id, status, to_json(expires_at) as expires_at, to_json(created_at) as created_at, order_id`)
  return toRecord({ ...row!, items: reservation.items })
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
  /** Its lines, with the units each holds now. */
  lines: Array<ReservationItem & { held: number }>
}

const LOCK_RESERVATION = statement(sql`select r.id, r.status, r.expires_at <= $3::timestamptz as lapsed,
    coalesce((select json_agg(json_build_object('productId', i.product_id, 'combinationId', i.combination_id, 'quantity', i.quantity, 'held', i.held) order by i.line)
      from reservation_items i where i.reservation_id = r.id), '[]'::json) as lines
  from reservations r where r.id = $1::uuid and r.api_key_id = $2::uuid for update of r`)

/**
 * The key's reservation with its lines, its row locked until the transaction ends. Its products
 * are locked first (db/stock.ts), so what its lines hold cannot change meanwhile.
 */
export async function lockReservation (tx: Tx, apiKeyId: string, id: string, now: Date): Promise<LockedReservation | null> {
  const [row] = await runStatement<LockedReservation>(tx, LOCK_RESERVATION, [id, apiKeyId, now.toISOString()])
  return row ?? null
}

/** Ends active reservations (released, expired, or consumed by `orderId`). */
export async function endReservations (tx: Tx, ids: readonly string[], status: Exclude<ReservationStatus, 'active'>, now: Date, orderId: string | null = null): Promise<void> {
  if (ids.length === 0) return
  await execute(tx, sql`update reservations set status = ${status}, order_id = ${orderId}::uuid, updated_at = ${now.toISOString()}::timestamptz
    where id = any(${uuids(ids)})`)
}

/**
 * Up to `limit` active reservations past their expiresAt, oldest deadline first, with the
 * products their lines name; read without a lock (the sweep locks those products first).
 */
export async function findLapsed (db: Tx, now: Date, limit: number): Promise<Array<{ id: string, productIds: string[] }>> {
  return execute<{ id: string, productIds: string[] }>(db, sql`select r.id::text as id,
      coalesce((select json_agg(distinct i.product_id) from reservation_items i where i.reservation_id = r.id), '[]'::json) as "productIds"
    from reservations r where r.status = 'active' and r.expires_at <= ${now.toISOString()}::timestamptz
    order by r.expires_at limit ${limit}`)
}

/** Of `ids`, those still active and past their expiresAt, their rows locked (in id order). */
export async function lockLapsed (tx: Tx, ids: readonly string[], now: Date): Promise<string[]> {
  if (ids.length === 0) return []
  const rows = await execute<{ id: string }>(tx, sql`select id::text as id from reservations
    where id = any(${uuids(ids)}) and status = 'active' and expires_at <= ${now.toISOString()}::timestamptz order by id for update`)
  return rows.map((r) => r.id)
}

/** Active holds across every key: how many reservations and units (for the metrics). */
export async function activeHoldTotals (db: Tx): Promise<{ reservations: number, units: number }> {
  const [row] = await execute<{ reservations: number, units: number }>(db, sql`
    select count(distinct r.id)::int as reservations, coalesce(sum(i.held), 0)::int as units
    from reservations r left join reservation_items i on i.reservation_id = r.id where r.status = 'active'`)
  return row!
}
