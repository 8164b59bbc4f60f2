// Catalogue reads for integrators: a product by id and pages of the product list, answered
// from the stored documents (the read model, db/products.ts) through the instance's cache,
// which never outlives a price change (a discount starting or ending) nor a change to a
// product it shows, seen by any instance.
import type { Database } from '../db/client.ts'
import { recordEvents } from '../db/events.ts'
import { readKeptPages, rebuildListPages, type KeptPage } from '../db/list-pages.ts'
import {
  countMatchingProducts, findDiscountBoundaries, listGroupings, listProducts, readDocuments, touchDiscountBoundaries,
  type Grouping, type ProductDocument, type ProductFilters
} from '../db/products.ts'
import { findSearchMatches } from '../db/search.ts'
import { lockFreeProducts, lockProductsToRender, ProductLocks } from '../db/stock.ts'
import { entityTag } from '../lib/entity-tag.ts'
import { TickBatch } from '../lib/tick-batch.ts'
import { PAGE_SIZE, isUuid, type ListWindow, type SortKey } from '../schemas/common.ts'
import type { CategoryPage, ListProductsQuery } from '../schemas/products.ts'
import { VOLATILE, productTag, type CatalogCache } from './catalog-cache.ts'
import { nextCursor } from './list-cursor.ts'
import type { Shelf, StockKeeper } from './stock.ts'

export type { ProductFilters }

export type ProductListQuery = Omit<ListProductsQuery, 'page' | 'cursor'>

/** A read as it is sent: JSON text (a Product or a ProductPage) and its entity tag. */
export interface CatalogRead { body: string, etag: string }

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

/** Whether a stock change or a moved updatedAt may add a product to the list (not only change one it holds). */
const isVolatile = (filters: ProductFilters) => filters.isAvailable !== undefined || filters.updatedSince !== undefined

/**
 * What an instance's catalogue reads share: the database, the read cache, and the batches in
 * which reads that miss the cache together go to the database together. Under concurrent
 * requests one statement then reads the documents (or kept pages) of several: one round trip
 * and one wake-up of a database backend instead of one each.
 */
export class CatalogReads {
  readonly database: Database
  readonly cache: CatalogCache
  /** Product documents by id (lower case). */
  readonly documents: TickBatch<string, ProductDocument>
  /** The whole list's kept pages by number. */
  readonly keptPages: TickBatch<number, KeptPage>

  /** `batchSize`: the most documents or pages one statement reads. */
  constructor (database: Database, cache: CatalogCache, batchSize: number) {
    this.database = database
    this.cache = cache
    this.documents = new TickBatch(async (ids) => {
      const found = await database.readCatalog(cache.version, (db) => readDocuments(db, ids))
      return new Map(found.map((d) => [d.id, d]))
    }, batchSize)
    this.keptPages = new TickBatch((pages) => database.readCatalog(cache.version, (db) => readKeptPages(db, pages, new Date())), batchSize)
  }
}

export async function getProduct (reads: CatalogReads, id: string): Promise<CatalogRead | null> {
  return reads.cache.cachedRead(productTag(id), async () => {
    const found = await reads.documents.load(id.toLowerCase())
    if (found === undefined) return null
    return { value: { body: found.body, etag: found.etag }, changesAt: [found.priceChangesAt], bytes: found.body.length, tags: [productTag(found.id)] }
  })
}

/** A page's items as they are sent: their JSON joined by commas, their entity tags likewise, their ids. */
interface PageItems { items: string, etags: string, ids: string[], changesAt: Array<Date | null>, next: SortKey | null, total?: number }

const itemsOf = (found: { items: ProductDocument[], next: SortKey | null, total?: number }): PageItems => ({
  items: found.items.map((i) => i.body).join(','),
  etags: found.items.map((i) => i.etag).join(','),
  ids: found.items.map((i) => i.id),
  changesAt: found.items.map((i) => i.priceChangesAt),
  next: found.next,
  total: found.total
})

/** A page's JSON from its items' stored JSON, in the key order of the ProductPage schema. */
function pageBody (items: string, page: number, total: number, cursor: string | null): string {
  return `{"items":[${items}],"page":${page},"pageSize":${PAGE_SIZE},"total":${total},"nextCursor":${JSON.stringify(cursor)}}`
}

/**
 * A page's entity tag without hashing its JSON: the body is its items' stored JSON (each
 * named by its own tag) inside an envelope of the page number, the total and the cursor.
 */
function pageTag (etags: string, page: number, total: number, cursor: string | null): string {
  return entityTag(`${etags}\n${page}\n${total}\n${cursor ?? ''}`)
}

/** Whether a page is one the whole list keeps whole: by number, with no filter. */
const isKeptPage = (filters: ProductFilters, window: ListWindow) =>
  window.after === null && Object.values(filters).every((v) => v === undefined)

export async function listProductPage (reads: CatalogReads, cursorSecret: string, filters: ProductFilters, window: ListWindow): Promise<CatalogRead> {
  const { database, cache: catalogCache } = reads
  const volatile = isVolatile(filters) ? [VOLATILE] : []
  // The page number is part of the key: the body and its nextCursor carry it, and two crawls
  // may reach the same sort key at different page numbers.
  const page = await catalogCache.cachedRead(`list:${JSON.stringify([filters, window.page, window.offset, window.after])}`, async () => {
    const { query, ...others } = filters
    const kept = isKeptPage(filters, window) ? await reads.keptPages.load(window.page) : undefined
    const found: PageItems = kept !== undefined
      ? { items: kept.items, etags: kept.etags, ids: kept.ids, changesAt: [kept.priceChangesAt], next: kept.next }
      : query
        ? itemsOf(await searchPage(reads, query, others, window, volatile))
        : itemsOf(await database.readCatalog(catalogCache.version, (db) => listProducts(db, others, window)))
    // Counting every match again for each page is what made deep crawls slow: the total of a
    // filter is kept until the catalogue changes.
    const total = found.total !== undefined
      ? found.total
      : (await catalogCache.cachedRead<number>(`count:${JSON.stringify(filters)}`, async () => ({
          value: await database.readCatalog(catalogCache.version, (db) => countMatchingProducts(db, filters)),
          changesAt: [],
          tags: volatile
        })))!
    const cursor = nextCursor(cursorSecret, 'products', filters, window.page, found.next)
    const body = pageBody(found.items, window.page, total, cursor)
    return {
      value: { body, etag: pageTag(found.etags, window.page, total, cursor) },
      changesAt: found.changesAt,
      bytes: body.length,
      tags: [...found.ids.map(productTag), ...volatile]
    }
  })
  return page!
}

/** A search's matches as the search cache keeps them: the ids as one string, half the heap of as many strings. */
interface KeptMatches { ids: string, next: SortKey | null, total: number }
const UUID_LENGTH = 36

/**
 * A search's page: which products it finds comes from the search cache when the same search
 * ran lately (finding them reads every match), their documents from the database, as any
 * list page's do. The query's case does not change what it finds.
 */
async function searchPage ({ database, cache: catalogCache }: CatalogReads, query: string, others: Omit<ProductFilters, 'query'>, window: ListWindow, tags: string[]) {
  const key = `search:${JSON.stringify([query.toLowerCase(), others, window.offset, window.after, window.limit])}`
  const matches = (await catalogCache.cachedMatches<KeptMatches>(key, async () => {
    const found = await database.readCatalog(catalogCache.version, (db) => findSearchMatches(db, query, others, window))
    return { value: { ids: found.ids.join(''), next: found.next, total: found.total }, changesAt: [], tags }
  }))!
  const ids = Array.from({ length: matches.ids.length / UUID_LENGTH }, (_, i) => matches.ids.slice(i * UUID_LENGTH, (i + 1) * UUID_LENGTH))
  // One statement, not the shared batches: a page shows its products as of one moment.
  const items = await database.readCatalog(catalogCache.version, (db) => readDocuments(db, ids))
  return { next: matches.next, total: matches.total, items }
}

/** A page of categories or brands with their product counts (the same shape for both). */
export async function listGroupingPage (database: Database, catalogCache: CatalogCache, cursorSecret: string, grouping: Grouping, window: ListWindow): Promise<CategoryPage> {
  const page = await catalogCache.cachedRead(`${grouping}:${JSON.stringify([window.page, window.offset, window.after])}`, async () => {
    const { items, total, next } = await database.readCatalog(catalogCache.version, (db) => listGroupings(db, grouping, window))
    return {
      value: { items, page: window.page, pageSize: PAGE_SIZE, total, nextCursor: nextCursor(cursorSecret, grouping, {}, window.page, next) },
      changesAt: []
    }
  })
  return page!
}

/** Documents past their price change rewritten by one sweep at most; the rest are left to the next. */
const SWEEP_BATCH = 2000

/**
 * A discount window that opened or closed changes a product's sellPrice, so its updatedAt
 * moves too, and its document is rewritten (until then reads render it again themselves:
 * sellPrice is exact at read time). Run every sweep interval; returns how many products moved.
 * Products another transaction holds are left to the next run (the lookback covers them).
 */
export async function markDiscountBoundaries (stock: StockKeeper, lookbackMs: number, now = new Date()): Promise<number> {
  return stock.run(async (shelf) => {
    const due = await findDiscountBoundaries(shelf.tx, now, lookbackMs)
    const locks = await shelf.adopt(() => lockFreeLocks(shelf, now, due))
    const moved = await touchDiscountBoundaries(shelf.tx, due.filter((id) => locks.has(id)), now, lookbackMs)
    await recordEvents(shelf.tx, moved.map((id) => ({ type: 'product.updated' as const, resourceId: id })))
    shelf.rewrite(locks.ids)
    return moved.length
  }, now)
}

// The stale documents and the products due, locked without waiting.
async function lockFreeLocks (shelf: Shelf, now: Date, due: string[]): Promise<ProductLocks> {
  const stale = await lockProductsToRender(shelf.tx, now, SWEEP_BATCH, { missing: false })
  const free = await lockFreeProducts(shelf.tx, due.filter((id) => !stale.has(id)))
  return new ProductLocks([...stale.ids, ...free.ids])
}

/**
 * Renders the documents of products that have none (a store upgraded to the read model),
 * a batch a transaction; reads render them on the fly until then. Returns how many.
 */
export async function renderMissingDocuments (stock: StockKeeper, batch = 500): Promise<number> {
  let total = 0
  for (;;) {
    const n = await stock.run(async (shelf) => {
      const locks = await shelf.adopt(() => lockProductsToRender(shelf.tx, shelf.now, batch, { missing: true }))
      shelf.rewrite(locks.ids)
      return locks.ids.length
    })
    total += n
    if (n < batch) return total
  }
}

/**
 * Builds again up to `batch` pages of the kept list whose products changed (or that a
 * renumbering left unbuilt), in one transaction; returns how many. Every instance runs it:
 * a page another is building is skipped.
 */
export async function rebuildKeptPages (database: Database, batch: number): Promise<number> {
  return database.db.transaction((tx) => rebuildListPages(tx, batch))
}
