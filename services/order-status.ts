// The operator's status changes. The external API never changes a live order; the store moves
// it along pending → confirmed → processing → shipped → delivered, or cancels it before it ships.
// Cancelling gives the units the order took back to stock (a stock write: services/stock.ts).
// A test key may move its own test orders along the same transitions, so an integrator can
// see every status and event its integration must handle without the store's help.
import type { Database } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { findOrderForKey, findOrderProducts, lockOrder, updateOrderStatus } from '../db/orders.ts'
import { apiError } from '../errors.ts'
import type { KeyMode } from '../lib/api-key-secret.ts'
import type { Order, OrderStatus, OrderSummary } from '../schemas/orders.ts'
import { StockKeeper, type Shelf } from './stock.ts'
import type { WriteDeadline } from './write-deadline.ts'

export const STATUS_TRANSITIONS: Record<OrderStatus, OrderStatus[]> = {
  pending: ['confirmed', 'cancelled'],
  confirmed: ['processing', 'cancelled'],
  processing: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: []
}

export type StatusChange =
  | { ok: true, order: OrderSummary, from: OrderStatus }
  | { ok: false, reason: 'not_found' }
  | { ok: false, reason: 'forbidden', from: OrderStatus, allowed: OrderStatus[] }

/**
 * Changes an order's status (by number or id) when its current status allows it. The units a
 * cancellation gives back reach every instance's cache through the products' feed events.
 */
export function setOrderStatus (database: Database, orderNumberOrId: string, status: OrderStatus, now = new Date()): Promise<StatusChange> {
  return new StockKeeper(database).run((shelf) => changeStatus(shelf, orderNumberOrId, status), now)
}

/**
 * A test key moves one of its own test orders as the operator would (the same transitions,
 * the same `order.status_changed` event); answers the order with its items. A live key may
 * not: its orders are the store's to move.
 */
export async function setTestOrderStatus (database: Database, key: { id: string, mode: KeyMode }, orderNumberOrId: string, status: OrderStatus, deadline?: WriteDeadline, now = new Date()): Promise<Order> {
  if (key.mode !== 'test') throw apiError('test_mode_only')
  return new StockKeeper(database).run(async (shelf) => {
    const change = await changeStatus(shelf, orderNumberOrId, status, key.id)
    if (!change.ok && change.reason === 'not_found') throw apiError('order_not_found')
    if (!change.ok) {
      const next = change.allowed.length > 0 ? `it can go to ${change.allowed.join(' or ')}` : 'it cannot change any more'
      throw apiError('invalid_status_transition', `The order is ${change.from}: it cannot go to ${status}; ${next}`)
    }
    return (await findOrderForKey(shelf.tx, key.id, change.order.id))!
  }, now, deadline)
}

// With `owner`, only that key's test orders are found: anything else answers as missing.
async function changeStatus (shelf: Shelf, orderNumberOrId: string, status: OrderStatus, owner?: string): Promise<StatusChange> {
  const { tx, now } = shelf
  const found = await findOrderProducts(tx, orderNumberOrId, owner)
  if (found === null) return { ok: false, reason: 'not_found' } as const
  // Cancelling a live order gives stock back: its products are locked before the order (the
  // lock order). A test order took nothing.
  if (status === 'cancelled' && found.mode === 'live') await shelf.lock(found.productIds)
  const current = (await lockOrder(tx, found.id))!
  if (owner !== undefined && current.mode !== 'test') return { ok: false, reason: 'not_found' } as const
  const allowed = STATUS_TRANSITIONS[current.status]
  if (!allowed.includes(status)) return { ok: false, reason: 'forbidden', from: current.status, allowed } as const
  const order = await updateOrderStatus(tx, current.id, status, now)
  if (status === 'cancelled') await shelf.giveBackOrder(current.id)
  await recordEvents(tx, [{
    type: 'order.status_changed',
    resourceId: order.id,
    apiKeyId: current.apiKeyId,
    data: { orderNumber: order.orderNumber, status, previousStatus: current.status }
  }])
  return { ok: true, order, from: current.status } as const
}
