// Placing an order: wholly or not at all, in one stock write (services/stock.ts). Prices come
// from the catalogue at this moment, read once the products are locked, so the stock checked
// is the stock taken (never below zero, whatever the concurrency); an Idempotency-Key is
// claimed, replayed or refused on the same path.
// A test key's order runs the same checks against the same stock but takes none of it: it
// writes only rows its own key can see (the order, its items, its count, its event).
import type { Database } from '../db/client.ts'
import { deleteExpiredIdempotencyKeys, type IdempotencyRecord } from '../db/idempotency.ts'
import { findOrderSummary, insertOrder } from '../db/orders.ts'
import type { StoreSettings } from '../db/settings.ts'
import { apiError } from '../errors.ts'
import { toCents, toDecimalText, type Cents } from '../lib/money.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { ORDER_SHAPE_VERSION, SHAPE_BEFORE_MODE, type OrderMode, type OrderSummary } from '../schemas/orders.ts'
import { readOrderRequest } from './order-request.ts'
import { consumeReservation, reservationForOrder } from './reservations.ts'
import { MAX_AMOUNT_CENTS, type StockKeeper } from './stock.ts'
import type { WriteDeadline } from './write-deadline.ts'

export interface PlaceOrderInput {
  apiKeyId: string
  /** The key's mode: a test order takes no stock and changes nothing of the catalogue. */
  mode: OrderMode
  body: unknown
  /** A valid Idempotency-Key header, if one was sent. */
  idempotencyKey: string | undefined
  settings: StoreSettings
  /** The absolute URL of an order. */
  locationOf: (orderId: string) => string
  deadline?: WriteDeadline
}

export interface PlacedOrder {
  order: OrderSummary
  location: string
  /** The stored response of an earlier request with the same Idempotency-Key. */
  replayed: boolean
}

export async function placeOrder (stock: StockKeeper, input: PlaceOrderInput, now = new Date()): Promise<PlacedOrder> {
  const idempotency = input.idempotencyKey === undefined
    ? null
    : {
        apiKeyId: input.apiKeyId,
        key: input.idempotencyKey,
        requestHash: jsonHash(input.body),
        response: (placed: OrderSummary) => ({ body: placed, location: input.locationOf(placed.id), shapeVersion: ORDER_SHAPE_VERSION })
      }
  const written = await stock.runIdempotent(idempotency, async (shelf) => {
    const request = readOrderRequest(input.body, input.settings)
    // The lines' products are locked first; a reservation the order names must hold the same
    // products (else reservation_mismatch), and its held units count as this order's stock,
    // not taken twice. A test order (without one) takes nothing, so it waits for no one's lock.
    const sellables = await shelf.load(request.lines, { lock: input.mode === 'live' || request.reservationId !== null })
    const held = request.reservationId === null ? undefined : await reservationForOrder(shelf, input.apiKeyId, request.reservationId, request.lines)
    const priced = shelf.price('ordered', request.lines, sellables, held)
    // Where stock leaves the shelf: every decrement of this order in one round trip.
    shelf.take(priced, input.mode, held)
    const deliveryFee: Cents = request.address ? toCents(input.settings.deliveryFee) : 0
    if (priced.total + deliveryFee > MAX_AMOUNT_CENTS) throw apiError('order_creation_failed', 'The order total is larger than an order can hold')
    const id = crypto.randomUUID()
    if (request.reservationId !== null) await consumeReservation(shelf, request.reservationId, id)
    // The stock is as the order leaves it: the products' documents and events, before the order's own.
    await shelf.finish()
    return insertOrder(shelf.tx, id, {
      apiKeyId: input.apiKeyId,
      mode: input.mode,
      total: toDecimalText(priced.total),
      deliveryFee: toDecimalText(deliveryFee),
      finalTotal: toDecimalText(priced.total + deliveryFee),
      productsCount: request.lines.reduce((sum, l) => sum + l.quantity, 0),
      customerName: request.customerName,
      customerPhone: request.customerPhone,
      note: request.note,
      address: request.address,
      items: priced.items
    }, now)
  }, now, input.deadline)
  if (written.replayed) return replay(stock.database, written.record)
  return { order: written.result, location: input.locationOf(written.result.id), replayed: false }
}

async function replay (database: Database, record: IdempotencyRecord): Promise<PlacedOrder> {
  // Stored in an older shape (before an upgrade added a field): the same order in today's.
  // Orders stored just before `mode` existed are all live ones; older shapes are read again.
  const order = record.shapeVersion === ORDER_SHAPE_VERSION
    ? record.body as OrderSummary
    : record.shapeVersion === SHAPE_BEFORE_MODE
      ? { ...record.body as Omit<OrderSummary, 'mode'>, mode: 'live' as const }
      : await findOrderSummary(database.db, (record.body as { id: string }).id)
  if (order === null) throw apiError('internal_error', 'The order this Idempotency-Key created is gone')
  return { order, location: record.location, replayed: true }
}

/** Deletes Idempotency-Key records past their time; returns how many. */
export function deleteExpiredReplays (database: Database): Promise<number> {
  return deleteExpiredIdempotencyKeys(database.db)
}
