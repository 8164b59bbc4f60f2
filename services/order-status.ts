// The operator's status changes. The external API never changes an order; the store moves
// it along pending → confirmed → processing → shipped → delivered, or cancels it before it ships.
import type { Database } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { lockOrder, updateOrderStatus } from '../db/orders.ts'
import type { OrderStatus, OrderSummary } from '../schemas/orders.ts'

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
export async function setOrderStatus (database: Database, orderNumberOrId: string, status: OrderStatus, now = new Date()): Promise<StatusChange> {
  return database.db.transaction(async (tx) => {
    const current = await lockOrder(tx, orderNumberOrId)
    if (current === null) return { ok: false, reason: 'not_found' } as const
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
  })
}
