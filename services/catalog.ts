// Catalogue reads for integrators: a product by id and pages of the product list, read
// through the instance's cache, which never outlives a price change (a discount starting or
// ending) nor a catalogue change seen by any instance.
import type { Database } from '../db/client.ts'
import { findProduct, listProducts, type ProductFilters } from '../db/products.ts'
import { PAGE_SIZE, isUuid } from '../schemas/common.ts'
import type { Product, ProductPage } from '../schemas/products.ts'
import type { StoreState } from './store-state.ts'

export interface CatalogReader { database: Database, storeState: StoreState }

export interface ProductListQuery {
  query?: string | undefined
  isAvailable?: 'true' | 'false' | undefined
  categoryIds?: string | undefined
  brandIds?: string | undefined
  barcode?: string | undefined
  sku?: string | undefined
}

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
