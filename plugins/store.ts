// Adds the database and what each instance keeps about the store in memory: settings and
// catalogue version (polled), the catalogue read cache, and the API key cache.
import fp from 'fastify-plugin'
import type { Database } from '../db/client.ts'
import { ApiKeyCache } from '../services/api-keys.ts'
import { StoreState } from '../services/store-state.ts'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
    storeState: StoreState
    apiKeys: ApiKeyCache
  }
}

export default fp<{ database: Database }>(async function storePlugin (app, { database }) {
  const { config } = app
  const onError = (err: unknown) => app.log.warn({ err }, 'background store refresh failed')
  const storeState = new StoreState(database, {
    pollIntervalMs: config.STATE_POLL_MS,
    cacheBytes: config.CATALOG_CACHE_MB * 1024 * 1024,
    cacheMaxMs: config.CATALOG_CACHE_MAX_MS,
    settleMs: config.READ_SETTLE_MS,
    onError
  })
  await storeState.refresh()
  storeState.start()
  const apiKeys = new ApiKeyCache(database, { ttlMs: config.KEY_CACHE_TTL_MS, touchIntervalMs: config.KEY_LAST_USED_FLUSH_MS, onError })

  app.decorate('database', database)
  app.decorate('storeState', storeState)
  app.decorate('apiKeys', apiKeys)

  app.addHook('onClose', async () => {
    storeState.stop()
    await apiKeys.close()
  })
}, { name: 'store' })
