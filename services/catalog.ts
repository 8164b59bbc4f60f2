// Catalogue reads for integrators: a product by id and pages of the product list, read
// through the instance's cache, which never outlives a price change (a discount starting or
// ending) nor a catalogue change seen by any instance.
import type { Database } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { findProduct, listGroupings, listProducts, touchDiscountBoundaries, type Grouping, type ProductFilters } from '../db/products.ts'
import { PAGE_SIZE, isUuid } from '../schemas/common.ts'
import type { CategoryPage, ListProductsQuery, Product, ProductPage } from '../schemas/products.ts'
import type { StoreState } from './store-state.ts'

export interface CatalogReader { database: Database, storeState: StoreState }

export type ProductListQuery = Omit<ListProductsQuery, 'page'>

function guidList (value: string | undefined): string[] | undefined {
  const ids = value?.split(',').map((s) => s.trim().toLowerCase()).filter(isUuid)
  // No valid GUID at all: the filter is absent, as the contract says.
  return ids !== undefined && ids.length > 0 ? [...new Set(ids)] : undefined
}

/** The filters a list query asks for; empty parameters (`query=`) are no filter. */
export function productFilters (q: ProductListQuery): ProductFilters {
  return {
    query: q.query?.trim() || undefined,
    isAvailable: q.isAvailable === undefined ? undefined : q.isAvailable === 'true',
    categoryIds: guidList(q.categoryIds),
    brandIds: guidList(q.brandIds),
    // Exact matches, so not trimmed.
    sku: q.sku || undefined,
    barcode: q.barcode || undefined
  }
}

export async function getProduct ({ database, storeState }: CatalogReader, id: string): Promise<Product | null> {
  return storeState.cachedRead(`product:${id.toLowerCase()}`, async () => {
    const found = await findProduct(database.db, id)
    return found && { value: found.product, changesAt: [found.priceChangesAt] }
  })
}

export async function listProductPage ({ database, storeState }: CatalogReader, filters: ProductFilters, window: { page: number, limit: number, offset: number }): Promise<ProductPage> {
  const page = await storeState.cachedRead(`list:${window.page}:${JSON.stringify(filters)}`, async () => {
    const { items, total } = await listProducts(database.db, filters, window)
    return {
      value: { items: items.map((i) => i.product), page: window.page, pageSize: PAGE_SIZE, total },
      changesAt: items.map((i) => i.priceChangesAt)
    }
  })
  return page!
}

/** A page of categories or brands with their product counts (the same shape for both). */
export async function listGroupingPage ({ database, storeState }: CatalogReader, grouping: Grouping, window: { page: number, limit: number, offset: number }): Promise<CategoryPage> {
  const page = await storeState.cachedRead(`${grouping}:${window.page}`, async () => {
    const { items, total } = await listGroupings(database.db, grouping, window)
    return { value: { items, page: window.page, pageSize: PAGE_SIZE, total }, changesAt: [] }
  })
  return page!
}

/**
 * A discount window that opened or closed changes a product's sellPrice, so its updatedAt
 * moves too (sellPrice itself is computed at read time and always exact). Run every
 * sweep interval; returns how many products moved.
 */
export async function markDiscountBoundaries ({ database, storeState }: CatalogReader, lookbackMs: number, now = new Date()): Promise<number> {
  const moved = await database.db.transaction(async (tx) => {
    const ids = await touchDiscountBoundaries(tx, now, lookbackMs)
    await recordEvents(tx, ids.map((id) => ({ type: 'product.updated' as const, resourceId: id })))
    return ids
  })
  if (moved.length > 0) await storeState.catalogChanged()
  return moved.length
}
