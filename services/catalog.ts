// Catalogue reads for integrators: a product by id and pages of the product list, read
// through the instance's cache, which never outlives a price change (a discount starting or
// ending) nor a catalogue change seen by any instance.
import type { Database } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { countMatchingProducts, findProduct, listGroupings, listProducts, touchDiscountBoundaries, type Grouping, type ProductFilters } from '../db/products.ts'
import { PAGE_SIZE, isUuid, type ListWindow } from '../schemas/common.ts'
import type { CategoryPage, ListProductsQuery, Product, ProductPage } from '../schemas/products.ts'
import type { CatalogCache } from './catalog-cache.ts'
import { nextCursor } from './list-cursor.ts'

export type { ProductFilters }

export type ProductListQuery = Omit<ListProductsQuery, 'page' | 'cursor'>

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
    barcode: q.barcode || undefined,
    updatedSince: q.updatedSince
  }
}

export async function getProduct (database: Database, catalogCache: CatalogCache, id: string): Promise<Product | null> {
  return catalogCache.cachedRead(`product:${id.toLowerCase()}`, async () => {
    const found = await database.readCatalog(catalogCache.version, (db) => findProduct(db, id))
    return found && { value: found.product, changesAt: [found.priceChangesAt] }
  })
}

export async function listProductPage (database: Database, catalogCache: CatalogCache, cursorSecret: string, filters: ProductFilters, window: ListWindow): Promise<ProductPage> {
  const page = await catalogCache.cachedRead(`list:${JSON.stringify([filters, window.offset, window.after])}`, async () => {
    const found = await database.readCatalog(catalogCache.version, (db) => listProducts(db, filters, window))
    // Counting every match again for each page is what made deep crawls slow: the total of a
    // filter is kept until the catalogue changes.
    const total = found.total ?? (await catalogCache.cachedRead(`count:${JSON.stringify(filters)}`, async () => ({
      value: await database.readCatalog(catalogCache.version, (db) => countMatchingProducts(db, filters)),
      changesAt: []
    })))!
    return {
      value: {
        items: found.items.map((i) => i.product),
        page: window.page,
        pageSize: PAGE_SIZE,
        total,
        nextCursor: nextCursor(cursorSecret, 'products', filters, window.page, found.next)
      },
      changesAt: found.items.map((i) => i.priceChangesAt)
    }
  })
  return page!
}

/** A page of categories or brands with their product counts (the same shape for both). */
export async function listGroupingPage (database: Database, catalogCache: CatalogCache, cursorSecret: string, grouping: Grouping, window: ListWindow): Promise<CategoryPage> {
  const page = await catalogCache.cachedRead(`${grouping}:${JSON.stringify([window.offset, window.after])}`, async () => {
    const { items, total, next } = await database.readCatalog(catalogCache.version, (db) => listGroupings(db, grouping, window))
    return {
      value: { items, page: window.page, pageSize: PAGE_SIZE, total, nextCursor: nextCursor(cursorSecret, grouping, {}, window.page, next) },
      changesAt: []
    }
  })
  return page!
}

/**
 * A discount window that opened or closed changes a product's sellPrice, so its updatedAt
 * moves too (sellPrice itself is computed at read time and always exact). Run every
 * sweep interval; returns how many products moved.
 */
export async function markDiscountBoundaries (database: Database, catalogCache: CatalogCache, lookbackMs: number, now = new Date()): Promise<number> {
  const moved = await database.db.transaction(async (tx) => {
    const ids = await touchDiscountBoundaries(tx, now, lookbackMs)
    await recordEvents(tx, ids.map((id) => ({ type: 'product.updated' as const, resourceId: id })))
    return ids
  })
  if (moved.length > 0) await catalogCache.catalogChanged()
  return moved.length
}
