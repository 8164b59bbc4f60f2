// Stock reservations: an integrator holds stock while its shopper pays, then an order takes
// the held units. A hold is the same conditional decrement an order makes, so every read,
// order and other hold sees the stock without the held units at once and nothing oversells;
// releasing or expiring gives them back; an order with the reservation takes them without a
// second decrement. A test key's holds run every check and take nothing.
import type { Database } from '../db/client.ts'
import { claimIdempotencyKey, findIdempotencyRecord, loadSellables, stockLeft, storeIdempotentResponse, takeStock } from '../db/orders.ts'
import { refreshProductState } from '../db/products.ts'
import {
  activeHoldTotals, claimLapsed, countActive, endReservation, expireReservations, findReservationForKey, giveBack, insertReservation, lockAndCountActive,
  lockReservation, type HeldLine, type ReservationRecord
} from '../db/reservations.ts'
import { ApiError, apiError, invalidField, type ErrorDetail } from '../errors.ts'
import { errorCodes } from '../lib/database-failure.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { addSharedSchemas, bodyAjv, validationDetails } from '../lib/validation.ts'
import type { OrderMode } from '../schemas/orders.ts'
import { OrderItemInput } from '../schemas/orders.ts'
import { CreateReservationBody, MAX_ACTIVE_RESERVATIONS, RESERVATION_SHAPE_VERSION, RESERVATION_TTL } from '../schemas/reservations.ts'
import { checkItems, type OrderLine } from './order-request.ts'
import { notActive } from './reservation-orders.ts'
import { namedIds, priceLines } from './place-order.ts'

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
}

export interface HoldOptions {
  idempotencyTtlHours: number
  idempotencyLockTimeoutMs: number
  /** Called after a committed hold (or release) moved tracked stock of these products. */
  onStockMoved: (productIds: string[]) => Promise<void>
}

export interface Hold { reservation: ReservationRecord, location: string, replayed: boolean }

export async function holdStock (database: Database, input: HoldInput, options: HoldOptions, now = new Date()): Promise<Hold> {
  // Its own namespace of request hashes: the same Idempotency-Key on an order never replays a hold.
  const idempotency = input.idempotencyKey === undefined ? null : { key: input.idempotencyKey, requestHash: jsonHash({ reservation: input.body }) }
  let outcome: { held: ReservationRecord, moved: string[] } | { previous: NonNullable<Awaited<ReturnType<typeof findIdempotencyRecord>>> }
  try {
    outcome = await database.db.transaction(async (tx) => {
      if (idempotency) {
        const claimed = await claimIdempotencyKey(tx, { apiKeyId: input.apiKeyId, ...idempotency, ttlHours: options.idempotencyTtlHours, lockTimeoutMs: options.idempotencyLockTimeoutMs })
        if (!claimed) return { previous: (await findIdempotencyRecord(tx, input.apiKeyId, idempotency.key))! }
      }
      const request = readHoldRequest(input.body)
      // A cheap look first; the exact count is taken again under the key's lock below.
      if (await countActive(tx, input.apiKeyId) >= MAX_ACTIVE_RESERVATIONS) throw apiError('reservation_limit_reached')
      const sellables = await loadSellables(tx, ...namedIds(request.lines))
      const { stock, names } = asReservationFailure(() => priceLines(request, sellables, now))
      const live = input.mode === 'live'
      const taken = live ? stock : []
      const failed = await takeStock(tx, taken)
      if (failed !== null) {
        const row = taken[failed]!
        const available = await stockLeft(tx, row.owner, row.id)
        throw reservationFailed(row.lines.map((i) => outOfStock(i, names[i]!, available)))
      }
      const moved = [...new Set(taken.map((t) => t.productId))]
      await refreshProductState(tx, moved, now)
      if (await lockAndCountActive(tx, input.apiKeyId) >= MAX_ACTIVE_RESERVATIONS) throw apiError('reservation_limit_reached')
      const tracked = new Set(taken.map((t) => t.id))
      const lines: HeldLine[] = request.lines.map((l) => ({ ...l, held: tracked.has(l.combinationId ?? l.productId) ? l.quantity : 0 }))
      const held = await insertReservation(tx, { apiKeyId: input.apiKeyId, mode: input.mode, expiresAt: new Date(now.getTime() + request.ttlSeconds * 1000), lines }, now)
      if (idempotency) {
        await storeIdempotentResponse(tx, input.apiKeyId, idempotency.key, { body: held, shapeVersion: RESERVATION_SHAPE_VERSION, location: input.locationOf(held.id) })
      }
      return { held, moved }
    })
  } catch (err) {
    if (errorCodes(err).includes('55P03')) throw apiError('idempotency_key_in_use', undefined, { headers: { 'retry-after': '1' } })
    throw err
  }
  if ('previous' in outcome) {
    if (outcome.previous.requestHash !== idempotency!.requestHash) throw apiError('idempotency_key_reused')
    return { reservation: outcome.previous.body as ReservationRecord, location: outcome.previous.location, replayed: true }
  }
  if (outcome.moved.length > 0) await options.onStockMoved(outcome.moved)
  return { reservation: outcome.held, location: input.locationOf(outcome.held.id), replayed: false }
}

/** A line that cannot be held fails as an order's would, under the reservation's own code. */
function asReservationFailure<T> (price: () => T): T {
  try {
    return price()
  } catch (err) {
    if (err instanceof ApiError && err.code === 'order_creation_failed') throw apiError('reservation_failed', err.message.replace('cannot be ordered', 'cannot be held'), err.details ? { details: err.details } : {})
    throw err
  }
}

function reservationFailed (details: ErrorDetail[]) {
  const shown = details.slice(0, 3).map((d) => d.message).join('; ')
  const message = details.length === 1 ? shown : `${details.length} lines cannot be held: ${shown}${details.length > 3 ? '; …' : ''}`
  return apiError('reservation_failed', message, { details })
}

const outOfStock = (line: number, name: string, available: number): ErrorDetail =>
  ({ path: `items[${line}]`, reason: 'out_of_stock', message: `items[${line}]: not enough stock for "${name}": ${available} available`, available })

export async function getReservation (database: Database, apiKeyId: string, id: string): Promise<ReservationRecord> {
  const found = await findReservationForKey(database.db, apiKeyId, id)
  if (found === null) throw apiError('reservation_not_found')
  return found
}

/** Releases the key's active reservation: its units are back when this returns. */
export async function releaseReservation (database: Database, apiKeyId: string, id: string, options: Pick<HoldOptions, 'onStockMoved'>, now = new Date()): Promise<void> {
  const moved = await database.db.transaction(async (tx) => {
    const reservation = await lockReservation(tx, apiKeyId, id, now)
    if (reservation === null) throw apiError('reservation_not_found')
    // Past its expiresAt it is expired, swept or not: the sweep gives its units back.
    if (reservation.status !== 'active' || reservation.lapsed) throw notActive(reservation)
    const products = await giveBack(tx, reservation.lines, now)
    await endReservation(tx, reservation.id, 'released', now)
    return products
  })
  if (moved.length > 0) await options.onStockMoved(moved)
}

/**
 * Expires the active reservations past their expiresAt, `batch` at a time, until none is left
 * that no one else holds; safe on every instance at once. Returns how many it expired.
 */
export async function expireLapsedReservations (database: Database, batch: number, now = new Date()): Promise<{ expired: number, moved: string[] }> {
  let expired = 0
  const moved = new Set<string>()
  for (;;) {
    const done = await database.db.transaction(async (tx) => {
      const { ids, lines } = await claimLapsed(tx, now, batch)
      const products = await giveBack(tx, lines, now)
      await expireReservations(tx, ids, now)
      return { count: ids.length, products }
    })
    expired += done.count
    for (const id of done.products) moved.add(id)
    if (done.count < batch) return { expired, moved: [...moved] }
  }
}

/** Active reservations across every key and the units they hold (for the metrics). */
export function activeHolds (database: Database): Promise<{ reservations: number, units: number }> {
  return activeHoldTotals(database.db)
}
