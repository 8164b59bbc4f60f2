// Adds the database and what each instance keeps about the store in memory: settings and
// catalogue version (polled), the read cache, and the API key cache.
import fp from 'fastify-plugin'
import type { Database } from '../db/client.ts'
import { ApiKeyCache } from '../lib/api-key-cache.ts'
import { StoreState } from '../lib/store-state.ts'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
    storeState: StoreState
    apiKeys: ApiKeyCache
  }
}

export interface StoreOptions {
  database: Database
  /** How often settings and the catalogue version are polled. */
  pollIntervalMs: number
  /** How long an authenticated key is trusted before it is looked up again. */
  keyCacheTtlMs: number
}

export default fp<StoreOptions>(async function storePlugin (app, options) {
  const onError = (err: unknown) => app.log.warn({ err }, 'background store refresh failed')
  const storeState = new StoreState(options.database, onError)
  await storeState.refresh()
  storeState.start(options.pollIntervalMs)
  const apiKeys = new ApiKeyCache(options.database, { ttlMs: options.keyCacheTtlMs, touchIntervalMs: 5000, onError })

  app.decorate('database', options.database)
  app.decorate('storeState', storeState)
  app.decorate('apiKeys', apiKeys)

  app.addHook('onClose', async () => {
    storeState.stop()
    await apiKeys.close()
  })
}, { name: 'store' })
