// The product list's filters as SQL conditions on `products p`. `query` is not among them:
// db/search.ts matches it against its own table and combines it with these.
import { sql, type SQL } from 'drizzle-orm'

export interface ProductFilters {
  query?: string | undefined
  isAvailable?: boolean | undefined
  categoryIds?: string[] | undefined
  brandIds?: string[] | undefined
  barcode?: string | undefined
  sku?: string | undefined
  /** ISO 8601 with offset: only products whose updated_at is at or after it. */
  updatedSince?: string | undefined
}

export const list = (values: string[]) => sql.join(values.map((v) => sql`${v}`), sql`, `)

/** The conditions of every filter but `query`, or null when none is set. */
export function whereClause (filters: Omit<ProductFilters, 'query'>): SQL | null {
  const conditions: SQL[] = []
  if (filters.isAvailable !== undefined) conditions.push(sql`p.available = ${filters.isAvailable}`)
  if (filters.categoryIds?.length) {
    conditions.push(sql`exists (select 1 from product_categories pc where pc.product_id = p.id and pc.category_id in (${list(filters.categoryIds)}))`)
  }
  if (filters.brandIds?.length) conditions.push(sql`p.brand_id in (${list(filters.brandIds)})`)
  // An id list from both tables rather than `p.sku = … or exists (…)`: the `or` would make
  // PostgreSQL scan every product, while each branch of the union uses its own index.
  if (filters.sku !== undefined) {
    conditions.push(sql`p.id in (select id from products where sku = ${filters.sku}
      union all select product_id from combinations where sku = ${filters.sku})`)
  }
  if (filters.barcode !== undefined) {
    conditions.push(sql`p.id in (select id from products where barcode = ${filters.barcode}
      union all select product_id from combinations where barcode = ${filters.barcode})`)
  }
  if (filters.updatedSince !== undefined) conditions.push(sql`p.updated_at >= ${filters.updatedSince}::timestamptz`)
  return conditions.length === 0 ? null : sql.join(conditions, sql` and `)
}
