// Which change events a key may see, as SQL: the one rule the changes feed and webhooks share.
// A key sees catalogue events with products:list and the events of its own orders with
// orders:list.
import { sql, type SQL } from 'drizzle-orm'

export interface VisibilityTerms {
  /** The change_events row: its table name or alias. */
  event: SQL
  /** The key's id, and whether it has products:list and orders:list: values or columns of a join. */
  apiKeyId: SQL
  products: SQL
  orders: SQL
}

export function eventVisibility ({ event, apiKeyId, products, orders }: VisibilityTerms): SQL {
  return sql`((${products} and ${event}.api_key_id is null and ${event}.type like 'product.%') or (${orders} and ${event}.api_key_id = ${apiKeyId}))`
}
