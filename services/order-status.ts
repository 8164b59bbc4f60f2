// The operator's status changes. The external API never changes a live order; the store moves
// it along pending → confirmed → processing → shipped → delivered, or cancels it before it ships.
// A test key may move its own test orders along the same transitions, so an integrator can
// see every status and event its integration must handle without the store's help.
import type { Database, Tx } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { findOrderForKey, lockOrder, updateOrderStatus } from '../db/orders.ts'
import { apiError } from '../errors.ts'
import type { KeyMode } from '../lib/api-key-secret.ts'
import type { Order, OrderStatus, OrderSummary } from '../schemas/orders.ts'

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

/** Changes an order's status (by number or id) when its current status allows it. */
export function setOrderStatus (database: Database, orderNumberOrId: string, status: OrderStatus, now = new Date()): Promise<StatusChange> {
  return database.db.transaction((tx) => changeStatus(tx, orderNumberOrId, status, now))
}

/**
 * A test key moves one of its own test orders as the operator would (the same transitions,
 * the same `order.status_changed` event); answers the order with its items. A live key may
 * not: its orders are the store's to move.
 */
export async function setTestOrderStatus (database: Database, key: { id: string, mode: KeyMode }, orderNumberOrId: string, status: OrderStatus, now = new Date()): Promise<Order> {
  if (key.mode !== 'test') throw apiError('test_mode_only')
  return database.db.transaction(async (tx) => {
    const change = await changeStatus(tx, orderNumberOrId, status, now, key.id)
    if (!change.ok && change.reason === 'not_found') throw apiError('order_not_found')
    if (!change.ok) {
      const next = change.allowed.length > 0 ? `it can go to ${change.allowed.join(' or ')}` : 'it cannot change any more'
      throw apiError('invalid_status_transition', `The order is ${change.from}: it cannot go to ${status}; ${next}`)
    }
    return (await findOrderForKey(tx, key.id, change.order.id))!
  })
}

// With `owner`, only that key's test orders are found: anything else answers as missing.
async function changeStatus (tx: Tx, orderNumberOrId: string, status: OrderStatus, now: Date, owner?: string): Promise<StatusChange> {
  const current = await lockOrder(tx, orderNumberOrId, owner)
  if (current === null || (owner !== undefined && current.mode !== 'test')) return { ok: false, reason: 'not_found' } as const
  const allowed = STATUS_TRANSITIONS[current.status]
  if (!allowed.includes(status)) return { ok: false, reason: 'forbidden', from: current.status, allowed } as const
  const order = await updateOrderStatus(tx, current.id, status, now)
  await recordEvents(tx, [{
    type: 'order.status_changed',
    resourceId: order.id,
    apiKeyId: current.apiKeyId,
    data: { orderNumber: order.orderNumber, status, previousStatus: current.status }
  }])
  return { ok: true, order, from: current.status } as const
}
