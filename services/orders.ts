// An integrator's own orders: its pages, newest first, and one order by number or id. Orders
// of another key answer exactly like missing ones.
import type { Database } from '../db/client.ts'
import { findOrderForKey, listOrdersForKey } from '../db/orders.ts'
import { PAGE_SIZE } from '../schemas/common.ts'
import type { Order, OrderPage } from '../schemas/orders.ts'

export async function listOrders (database: Database, apiKeyId: string, query: string | undefined, window: { page: number, limit: number, offset: number }): Promise<OrderPage> {
  const { items, total } = await listOrdersForKey(database.db, apiKeyId, query?.trim() || undefined, window)
  return { items, page: window.page, pageSize: PAGE_SIZE, total }
}

export function getOrder (database: Database, apiKeyId: string, orderNumberOrId: string): Promise<Order | null> {
  return findOrderForKey(database.db, apiKeyId, orderNumberOrId)
}
