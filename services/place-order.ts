// Placing an order: wholly or not at all, in one transaction. Prices come from the catalogue
// at this moment, stock is taken with conditional decrements (never below zero, whatever
// the concurrency), and an Idempotency-Key is claimed, replayed or refused on one path.
// A test key's order runs the same checks against the same stock but takes none of it: it
// writes only rows its own key can see (the order, its items, its count, its event).
import type { Database } from '../db/client.ts'
import {
  claimIdempotencyKey, deleteExpiredIdempotencyKeys, findIdempotencyRecord, findOrderSummary, insertOrder, loadSellables, stockLeft,
  storeIdempotentResponse, takeStock, type IdempotencyRecord, type SellableRow, type StockOwner
} from '../db/orders.ts'
import { refreshProductState } from '../db/products.ts'
import type { StoreSettings } from '../db/settings.ts'
import { apiError, type ErrorDetail, type LineFailureReason } from '../errors.ts'
import { errorCodes } from '../lib/database-failure.ts'
import { multiply, sellPriceCents, toCents, toDecimalText, type Cents } from '../lib/money.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { ORDER_SHAPE_VERSION, SHAPE_BEFORE_MODE, type OrderMode, type OrderSummary } from '../schemas/orders.ts'
import { readOrderRequest, type OrderLine, type OrderRequest } from './order-request.ts'
import { beyondHeld, consumeReservation, reservationForOrder, withHeldUnits } from './reservation-orders.ts'

// numeric(12,2) holds up to 9,999,999,999.99.
const MAX_AMOUNT_CENTS = 999_999_999_999

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
}

export interface PlaceOrderOptions {
  idempotencyTtlHours: number
  idempotencyLockTimeoutMs: number
  /** Called after a committed order took tracked stock, with the products it took from. */
  onStockTaken: (productIds: string[]) => Promise<void>
}

export interface PlacedOrder {
  order: OrderSummary
  location: string
  /** The stored response of an earlier request with the same Idempotency-Key. */
  replayed: boolean
}

export async function placeOrder (database: Database, input: PlaceOrderInput, options: PlaceOrderOptions, now = new Date()): Promise<PlacedOrder> {
  const idempotency = input.idempotencyKey === undefined ? null : { key: input.idempotencyKey, requestHash: jsonHash(input.body) }
  let outcome: { placed: OrderSummary, changed: string[] } | { previous: IdempotencyRecord }
  try {
    outcome = await database.db.transaction(async (tx) => {
      if (idempotency) {
        const claimed = await claimIdempotencyKey(tx, {
          apiKeyId: input.apiKeyId,
          ...idempotency,
          ttlHours: options.idempotencyTtlHours,
          lockTimeoutMs: options.idempotencyLockTimeoutMs
        })
        // Claimed earlier (and committed, perhaps while we waited for its lock): answer that
        // request's outcome, without reading this body again.
        if (!claimed) return { previous: (await findIdempotencyRecord(tx, input.apiKeyId, idempotency.key))! }
      }
      const request = readOrderRequest(input.body, input.settings)
      // With a reservation: its held units count as stock for this order, and are not taken twice.
      const reservation = request.reservationId === null ? null : await reservationForOrder(tx, input.apiKeyId, request.reservationId, request.lines, now)
      const sellables = await loadSellables(tx, ...namedIds(request.lines))
      const priced = priceLines(request, reservation === null ? sellables : withHeldUnits(sellables, reservation), now)
      // A test order takes none of what a live one would, so no product changes either.
      // Units its reservation holds are not taken twice: only what goes beyond them.
      const taken = input.mode === 'live' ? (reservation === null ? priced.stock : beyondHeld(priced.stock, reservation)) : []
      // Where stock leaves the shelf: every decrement of this order in one round trip.
      const failed = await takeStock(tx, taken)
      if (failed !== null) {
        // Sold out between the read above and its decrement: report what is left now.
        const stock = taken[failed]!
        const available = await stockLeft(tx, stock.owner, stock.id)
        throw orderCreationFailed(stock.lines.map((i) => outOfStock(i, priced.names[i]!, available)))
      }
      // Stock is part of what integrators see of a product: its availability, updatedAt, event and document follow.
      const changed = [...new Set(taken.map((t) => t.productId))]
      await refreshProductState(tx, changed, now)
      const deliveryFee: Cents = request.address ? toCents(input.settings.deliveryFee) : 0
      if (priced.total + deliveryFee > MAX_AMOUNT_CENTS) throw apiError('order_creation_failed', 'The order total is larger than an order can hold')
      const placed = await insertOrder(tx, {
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
      if (reservation !== null) await consumeReservation(tx, reservation, placed.id, now)
      if (idempotency) {
        await storeIdempotentResponse(tx, input.apiKeyId, idempotency.key, { body: placed, shapeVersion: ORDER_SHAPE_VERSION, location: input.locationOf(placed.id) })
      }
      return { placed, changed }
    })
  } catch (err) {
    // The lock_timeout ran out waiting for a concurrent request with the same key.
    if (errorCodes(err).includes('55P03')) throw apiError('idempotency_key_in_use', undefined, { headers: { 'retry-after': '1' } })
    throw err
  }

  if ('previous' in outcome) return replay(database, outcome.previous, idempotency!.requestHash)
  if (outcome.changed.length > 0) await options.onStockTaken(outcome.changed)
  return { order: outcome.placed, location: input.locationOf(outcome.placed.id), replayed: false }
}

async function replay (database: Database, record: IdempotencyRecord, hash: string): Promise<PlacedOrder> {
  if (record.requestHash !== hash) throw apiError('idempotency_key_reused')
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

export function namedIds (lines: OrderLine[]): [string[], string[]] {
  return [
    [...new Set(lines.map((l) => l.productId))],
    [...new Set(lines.flatMap((l) => (l.combinationId ? [l.combinationId] : [])))]
  ]
}

function itemName (row: SellableRow): string {
  return row.option_names && row.option_names.length > 0 ? `${row.name} (${row.option_names.join(' / ')})` : row.name
}

function orderCreationFailed (details: ErrorDetail[]) {
  // The first few lines in the message; every one of them in details.
  const shown = details.slice(0, 3).map((d) => d.message).join('; ')
  const message = details.length === 1 ? shown : `${details.length} lines cannot be ordered: ${shown}${details.length > 3 ? '; …' : ''}`
  return apiError('order_creation_failed', message, { details })
}

const lineFailure = (line: number, reason: LineFailureReason, message: string): ErrorDetail =>
  ({ path: `items[${line}]`, reason, message: `items[${line}]: ${message}` })

const outOfStock = (line: number, name: string, available: number): ErrorDetail =>
  ({ ...lineFailure(line, 'out_of_stock', `not enough stock for "${name}": ${available} available`), available })

export interface PricedLines {
  items: Array<{ productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: string, totalPrice: string }>
  total: Cents
  /** Tracked stock to take, in id order so concurrent orders never deadlock. */
  stock: Array<{ owner: StockOwner, id: string, productId: string, quantity: number, lines: number[] }>
  names: string[]
}

/**
 * Checks every line against the catalogue and prices it. An unknown product answers
 * invalid_item first; then every line that cannot be ordered is reported at once.
 */
export function priceLines (request: Pick<OrderRequest, 'lines'>, sellables: Map<string, SellableRow>, now: Date): PricedLines {
  request.lines.forEach((line, i) => {
    if (!sellables.has(`p:${line.productId}`)) throw apiError('invalid_item', `items[${i}].productId matches no product`)
  })
  const failures = new Map<number, ErrorDetail>()
  // Lines of the same product or combination are checked against their summed quantity.
  const wanted = new Map<string, { row: SellableRow, quantity: number, lines: number[] }>()
  const names: string[] = []
  const items = request.lines.map((line, i) => {
    const { row, problem } = chooseRow(line, sellables)
    if (problem) failures.set(i, lineFailure(i, ...problem))
    names.push(itemName(row))
    const key = row.combination_id ?? row.product_id
    const entry = wanted.get(key) ?? { row, quantity: 0, lines: [] }
    entry.quantity += line.quantity
    entry.lines.push(i)
    wanted.set(key, entry)
    const singlePrice = sellPriceCents(toCents(row.price), row.discount, now)
    const totalPrice = multiply(singlePrice, line.quantity)
    if (totalPrice > MAX_AMOUNT_CENTS) throw apiError('order_creation_failed', `items[${i}]: the line total is larger than an order can hold`)
    return {
      productId: row.product_id,
      combinationId: row.combination_id,
      name: itemName(row),
      quantity: line.quantity,
      singlePrice: toDecimalText(singlePrice),
      totalPrice: toDecimalText(totalPrice),
      cents: totalPrice
    }
  })
  for (const { row, quantity, lines } of wanted.values()) {
    if (row.quantity !== null && row.quantity < quantity) {
      for (const i of lines) if (!failures.has(i)) failures.set(i, outOfStock(i, names[i]!, row.quantity))
    }
  }
  if (failures.size > 0) throw orderCreationFailed([...failures.entries()].sort(([a], [b]) => a - b).map(([, f]) => f))

  const stock = [...wanted.entries()]
    .filter(([, w]) => w.row.quantity !== null)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, w]) => ({ owner: (w.row.combination_id ? 'combinations' : 'products') as StockOwner, id, productId: w.row.product_id, quantity: w.quantity, lines: w.lines }))
  return {
    items: items.map(({ cents: _cents, ...item }) => item),
    total: items.reduce((sum, item) => sum + item.cents, 0),
    stock,
    names
  }
}

/** The row a line orders (its combination, when it names one of its product's) and why it cannot be ordered, if it cannot. */
function chooseRow (line: OrderLine, sellables: Map<string, SellableRow>): { row: SellableRow, problem?: [LineFailureReason, string] } {
  const product = sellables.get(`p:${line.productId}`)!
  if (line.combinationId !== null) {
    const combination = sellables.get(`c:${line.combinationId}`)
    if (!combination || combination.owner_id !== line.productId) {
      return { row: product, problem: ['combination_mismatch', `combination ${line.combinationId} is not a combination of "${product.name}"`] }
    }
    if (!combination.owner_available) return { row: combination, problem: ['unavailable', `"${product.name}" is not available`] }
    if (!combination.is_available) return { row: combination, problem: ['unavailable', `"${itemName(combination)}" is not available`] }
    return { row: combination }
  }
  if (product.has_combinations) return { row: product, problem: ['combination_required', `"${product.name}" has combinations; send a combinationId`] }
  if (!product.is_available) return { row: product, problem: ['unavailable', `"${product.name}" is not available`] }
  return { row: product }
}

/** Deletes Idempotency-Key records past their time; returns how many. */
export function deleteExpiredReplays (database: Database): Promise<number> {
  return deleteExpiredIdempotencyKeys(database.db)
}
