// Stock reservations: an integrator holds stock while its shopper pays, then an order takes
// the held units. A hold takes its units as an order does (services/stock.ts), so every read,
// order and other hold sees the stock without them at once and nothing oversells; releasing
// or expiring gives them back; an order with the reservation takes them without a second
// decrement. A test key's holds run every check and take nothing.
import { countActive, endReservations, findLapsed, findReservationForKey, insertReservation, lockAndCountActive, lockLapsed, lockReservation, activeHoldTotals, type LockedReservation, type ReservationRecord } from '../db/reservations.ts'
import { apiError, invalidField } from '../errors.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { addSharedSchemas, bodyAjv, validationDetails } from '../lib/validation.ts'
import type { OrderMode } from '../schemas/orders.ts'
import { OrderItemInput } from '../schemas/orders.ts'
import { CreateReservationBody, MAX_ACTIVE_RESERVATIONS, RESERVATION_SHAPE_VERSION, RESERVATION_TTL } from '../schemas/reservations.ts'
import { checkItems, type OrderLine } from './order-request.ts'
import type { HeldUnits, Shelf, StockKeeper } from './stock.ts'
import type { WriteDeadline } from './write-deadline.ts'

addSharedSchemas([OrderItemInput])
const validateBody = bodyAjv.compile(CreateReservationBody)

export interface HoldRequest { lines: OrderLine[], ttlSeconds: number }

/** Reads a create-reservation body with an order's item checks, in the same order, then the rest of the schema. */
export function readHoldRequest (body: unknown): HoldRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidField('body', 'must be an object')
  checkItems((body as Record<string, unknown>).items)
  if (!validateBody(body)) {
    const details = validationDetails(validateBody.errors!, 'body')
    throw apiError('validation_failed', `${details[0]!.path}: ${details[0]!.message}`, { details })
  }
  const valid = body as unknown as { items: Array<{ productId: string, combinationId?: string | null, quantity?: number }>, ttlSeconds?: number }
  return {
    lines: valid.items.map((item) => ({ productId: item.productId.toLowerCase(), combinationId: item.combinationId?.toLowerCase() ?? null, quantity: item.quantity ?? 1 })),
    ttlSeconds: valid.ttlSeconds ?? RESERVATION_TTL.default
  }
}

export interface HoldInput {
  apiKeyId: string
  mode: OrderMode
  body: unknown
  idempotencyKey: string | undefined
  locationOf: (id: string) => string
  deadline?: WriteDeadline
}

export interface Hold { reservation: ReservationRecord, location: string, replayed: boolean }

export async function holdStock (stock: StockKeeper, input: HoldInput, now = new Date()): Promise<Hold> {
  const idempotency = input.idempotencyKey === undefined
    ? null
    : {
        apiKeyId: input.apiKeyId,
        key: input.idempotencyKey,
        // Its own namespace of request hashes: the same Idempotency-Key on an order never replays a hold.
        requestHash: jsonHash({ reservation: input.body }),
        response: (held: ReservationRecord) => ({ body: held, location: input.locationOf(held.id), shapeVersion: RESERVATION_SHAPE_VERSION })
      }
  const written = await stock.runIdempotent(idempotency, async (shelf) => {
    const request = readHoldRequest(input.body)
    // A key at its limit is told so before any line is judged: a look at its count, sent with
    // the lines' reading (one round trip); the exact count is taken again under the key's lock.
    const counting = countActive(shelf.tx, input.apiKeyId)
    // A test key's hold takes nothing, so it waits for no one's lock.
    const loading = shelf.load(request.lines, { lock: input.mode === 'live' })
    loading.catch(() => {})
    if (await counting >= MAX_ACTIVE_RESERVATIONS) throw apiError('reservation_limit_reached')
    const sellables = await loading
    const priced = shelf.price('held', request.lines, sellables)
    shelf.take(priced, input.mode)
    // Counted last, under the key's lock (so the stock is not waited for with it held); a key
    // at its limit has its hold rolled back.
    if (await lockAndCountActive(shelf.tx, input.apiKeyId) >= MAX_ACTIVE_RESERVATIONS) throw apiError('reservation_limit_reached')
    // The stock is as the hold leaves it: the products' documents go with the reservation's rows.
    await shelf.finish()
    const id = crypto.randomUUID()
    // The reservation and its lines, sent together (one round trip).
    const [reservation] = await Promise.all([
      insertReservation(shelf.tx, {
        id,
        apiKeyId: input.apiKeyId,
        mode: input.mode,
        expiresAt: new Date(now.getTime() + request.ttlSeconds * 1000),
        items: request.lines.map(({ productId, combinationId, quantity }) => ({ productId, combinationId, quantity }))
      }, now),
      shelf.holdLines(id, priced)
    ])
    return reservation
  }, now, input.deadline)
  if (written.replayed) return { reservation: written.record.body as ReservationRecord, location: written.record.location, replayed: true }
  return { reservation: written.result, location: input.locationOf(written.result.id), replayed: false }
}

export async function getReservation (stock: StockKeeper, apiKeyId: string, id: string): Promise<ReservationRecord> {
  const found = await findReservationForKey(stock.database.db, apiKeyId, id)
  if (found === null) throw apiError('reservation_not_found')
  return found
}

function notActive (reservation: Pick<LockedReservation, 'status' | 'lapsed'>) {
  const status = reservation.status === 'active' ? 'expired' : reservation.status
  return apiError('reservation_not_active', `The reservation is ${status}${status === 'consumed' ? ' by an order' : '; hold the stock again'}`)
}

/**
 * Locks the key's reservation row (its products are locked already: the lock order) and checks
 * it is still active: 404 reservation_not_found, 409 reservation_not_active.
 */
async function lockActive (shelf: Shelf, apiKeyId: string, id: string): Promise<LockedReservation> {
  const locked = await lockReservation(shelf.tx, apiKeyId, id, shelf.now)
  if (locked === null) throw apiError('reservation_not_found')
  // Past its expiresAt it is expired, swept or not: the sweep gives its units back.
  if (locked.status !== 'active' || locked.lapsed) throw notActive(locked)
  return locked
}

/** Releases the key's active reservation: its units are back when this returns. */
export async function releaseReservation (stock: StockKeeper, apiKeyId: string, id: string, deadline?: WriteDeadline, now = new Date()): Promise<void> {
  await stock.run(async (shelf) => {
    // Its lines never change: read before the lock, to know which products to lock.
    const reservation = await findReservationForKey(shelf.tx, apiKeyId, id)
    if (reservation === null) throw apiError('reservation_not_found')
    await shelf.lock(reservation.items.map((i) => i.productId))
    await lockActive(shelf, apiKeyId, id)
    await Promise.all([shelf.freeHeld([id], { giveBack: true }), endReservations(shelf.tx, [id], 'released', now)])
  }, now, deadline)
}

const lineKey = (line: { productId: string, combinationId: string | null }) => `${line.productId}/${line.combinationId ?? ''}`

function totals (lines: ReadonlyArray<{ productId: string, combinationId: string | null, quantity: number }>): Map<string, number> {
  const sums = new Map<string, number>()
  for (const line of lines) sums.set(lineKey(line), (sums.get(lineKey(line)) ?? 0) + line.quantity)
  return sums
}

/**
 * For an order that names a reservation, once the order's products are locked: locks the
 * reservation and checks it (404 reservation_not_found, 409 reservation_not_active, 400
 * reservation_mismatch unless the lines add up to the same products, combinations and
 * quantities, in any order, split or merged: then its products are the order's, locked
 * already), and answers what it holds per stock row. The order then calls `consumeReservation`.
 */
export async function reservationForOrder (shelf: Shelf, apiKeyId: string, reservationId: string, lines: OrderLine[]): Promise<HeldUnits> {
  const reservation = await lockActive(shelf, apiKeyId, reservationId)
  const reserved = totals(reservation.lines)
  const ordered = totals(lines)
  for (const key of new Set([...reserved.keys(), ...ordered.keys()])) {
    if (reserved.get(key) !== ordered.get(key)) {
      const [productId, combinationId] = key.split('/')
      const what = combinationId ? `combination ${combinationId} of product ${productId}` : `product ${productId}`
      throw apiError('reservation_mismatch', `The order's lines must hold what the reservation holds: ${what} is reserved ${reserved.get(key) ?? 0}, ordered ${ordered.get(key) ?? 0}`)
    }
  }
  const held = new Map<string, number>()
  for (const line of reservation.lines) {
    const id = line.combinationId ?? line.productId
    held.set(id, (held.get(id) ?? 0) + line.held)
  }
  return held
}

/** The reservation is consumed by the order: what it held is sold. */
export async function consumeReservation (shelf: Shelf, reservationId: string, orderId: string): Promise<void> {
  await Promise.all([shelf.freeHeld([reservationId], { giveBack: false }), endReservations(shelf.tx, [reservationId], 'consumed', shelf.now, orderId)])
}

/**
 * Expires the active reservations past their expiresAt, `batch` at a time, until none is left;
 * safe on every instance at once. Returns how many it expired.
 */
export async function expireLapsedReservations (stock: StockKeeper, batch: number, now = new Date()): Promise<number> {
  let expired = 0
  for (;;) {
    const { seen, ended } = await stock.run(async (shelf) => {
      const lapsed = await findLapsed(shelf.tx, now, batch)
      if (lapsed.length === 0) return { seen: 0, ended: 0 }
      await shelf.lock(lapsed.flatMap((r) => r.productIds))
      // Another instance's sweep, a release or an order may have ended some meanwhile.
      const ids = await lockLapsed(shelf.tx, lapsed.map((r) => r.id), now)
      await Promise.all([shelf.freeHeld(ids, { giveBack: true }), endReservations(shelf.tx, ids, 'expired', now)])
      return { seen: lapsed.length, ended: ids.length }
    }, now)
    expired += ended
    if (seen < batch) return expired
  }
}

/** Active reservations across every key and the units they hold (for the metrics). */
export function activeHolds (stock: StockKeeper): Promise<{ reservations: number, units: number }> {
  return activeHoldTotals(stock.database.db)
}
