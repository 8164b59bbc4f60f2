// Adds what each instance keeps in memory of the database: the store's settings
// (`app.store`), the catalogue read cache and the reads through it (`app.catalogReads`), the
// secret list cursors are sealed with, the API key cache, and the stock keeper every stock
// write runs through (`app.stock`), which tells this instance's cache what each committed
// write changed. The settings, the catalogue version and the secret are read here, before the
// first request; keeping them current is background work (plugins/background.ts).
import fp from 'fastify-plugin'
import { ApiKeyCache } from '../services/api-keys.ts'
import { CatalogCache } from '../services/catalog-cache.ts'
import { CatalogReads } from '../services/catalog.ts'
import { loadCursorSecret } from '../services/list-cursor.ts'
import { StockKeeper } from '../services/stock.ts'
import { Store, refreshState } from '../services/store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
    catalogCache: CatalogCache
    /** Catalogue reads through the cache, those that miss it together read together. */
    catalogReads: CatalogReads
    /** Seals list cursors; the same on every instance, so any of them opens a cursor. */
    cursorSecret: string
    apiKeys: ApiKeyCache
    stock: StockKeeper
  }
}

export default fp(async function statePlugin (app) {
  const { config, database } = app
  const store = new Store()
  const catalogCache = new CatalogCache(database, {
    bytes: config.CATALOG_CACHE_MB * 1024 * 1024,
    searchBytes: config.SEARCH_CACHE_MB * 1024 * 1024,
    maxMs: config.CATALOG_CACHE_MAX_MS,
    settleMs: config.READ_SETTLE_MS
  })
  const cursorSecret = await loadCursorSecret(database)
  await refreshState(database, store, catalogCache)

  app.decorate('store', store)
  app.decorate('catalogCache', catalogCache)
  app.decorate('catalogReads', new CatalogReads(database, catalogCache, config.CATALOG_READ_BATCH))
  app.decorate('cursorSecret', cursorSecret)
  app.decorate('apiKeys', new ApiKeyCache(database, { ttlMs: config.KEY_CACHE_TTL_MS }))
  app.decorate('stock', new StockKeeper(database, {
    onChanged: (productIds) => catalogCache.productsChanged(productIds),
    log: app.log,
    idempotencyTtlHours: config.IDEMPOTENCY_TTL_HOURS,
    idempotencyWaitMs: config.IDEMPOTENCY_LOCK_TIMEOUT_MS
  }))
}, { name: 'state', dependencies: ['database'] })
