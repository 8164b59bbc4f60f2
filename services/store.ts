// The store (the shop) as this instance knows it: its settings (maintenance, delivery fee,
// default country), read before the first request and kept current by the state poll.
import type { Database } from '../db/client.ts'
import { DEFAULT_SETTINGS, readStoreState, type StoreSettings } from '../db/settings.ts'
import type { CatalogCache } from './catalog-cache.ts'

export class Store {
  settings: StoreSettings = DEFAULT_SETTINGS
}

/**
 * The state poll: one query reads what other instances may have changed, the store's
 * settings, the catalogue's versions and the products changed since the last poll. A
 * failed poll changes nothing (the caller reports it).
 */
export async function refreshState (database: Database, store: Store, catalogCache: CatalogCache): Promise<void> {
  const startedAt = Date.now()
  const state = await readStoreState(database.db, catalogCache.position)
  store.settings = state.settings
  catalogCache.seen(state.catalog, startedAt)
}
