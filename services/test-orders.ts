// Clearing away test orders: an integrator's test runs pile up orders nobody will ship. Only
// rows of mode test are deleted, so no live order, stock or catalogue row can be touched.
import type { Database } from '../db/client.ts'
import { deleteTestOrders } from '../db/orders.ts'

/** Deletes every test order created before `before` (with its items); returns how many. */
export function purgeTestOrders (database: Database, before: Date): Promise<number> {
  return deleteTestOrders(database.db, before)
}
