// Stock reservations in SQL: a hold's row, the key's active count, its lookups, its status
// (released, expired, consumed) and the expiry sweep's candidates. What a hold's lines take
// from stock, and give back, is db/stock.ts's: the lines are written and freed there.
import { sql } from 'drizzle-orm'
import type { OrderMode } from '../schemas/orders.ts'
import type { ReservationStatus } from '../schemas/reservations.ts'
import { execute, type Tx } from './client.ts'

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
}

/** The key's reservation, its row locked until the transaction ends (after its products': see db/stock.ts). */
export async function lockReservation (tx: Tx, apiKeyId: string, id: string, now: Date): Promise<LockedReservation | null> {
  const [row] = await execute<LockedReservation>(tx, sql`
    select id, status, expires_at <= ${now.toISOString()}::timestamptz as lapsed from reservations
    where id = ${id}::uuid and api_key_id = ${apiKeyId}::uuid for update`)
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
