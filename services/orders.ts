// An integrator's own orders: its pages, newest first, and one order by number or id. Orders
// of another key answer exactly like missing ones.
import type { Database } from '../db/client.ts'
import { findOrderForKey, listOrdersForKey, type OrderFilters } from '../db/orders.ts'

export type { OrderFilters }
import { PAGE_SIZE, type ListWindow } from '../schemas/common.ts'
import type { Order, OrderPage } from '../schemas/orders.ts'
import { nextCursor } from './list-cursor.ts'

/** The filters a list query asks for; an empty `query` is no filter. */
export function orderFilters (q: { query?: string | undefined, updatedSince?: string | undefined }): OrderFilters {
  return { query: q.query?.trim() || undefined, updatedSince: q.updatedSince }
}

export async function listOrders (database: Database, cursorSecret: string, apiKeyId: string, filters: OrderFilters, window: ListWindow): Promise<OrderPage> {
  const { items, total, next } = await listOrdersForKey(database.db, apiKeyId, filters, window)
  // The cursor is the key's own: another key cannot page through with it.
  return { items, page: window.page, pageSize: PAGE_SIZE, total, nextCursor: nextCursor(cursorSecret, 'orders', filters, window.page, next, apiKeyId) }
}

export function getOrder (database: Database, apiKeyId: string, orderNumberOrId: string): Promise<Order | null> {
  return findOrderForKey(database.db, apiKeyId, orderNumberOrId)
}
