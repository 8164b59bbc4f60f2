// The embedded store's first run (`npm start` with no DATABASE_URL): the demo catalogue when
// the store has no product, and a key with every scope when there is none, so a newcomer
// can call the API at once.
import { countApiKeys } from '../db/api-keys.ts'
import type { Database } from '../db/client.ts'
import { countProducts } from '../db/products.ts'
import { SCOPES } from '../lib/api-key-secret.ts'
import { createKey, newKey } from './api-key-admin.ts'
import { importCatalog } from './catalog-import.ts'
import { demoCatalog } from './demo-catalog.ts'

export interface DemoStore {
  /** Whether the demo catalogue was loaded now. */
  loadedDemo: boolean
  /** The secret of the key made now, or null when keys existed. */
  key: string | null
}

export async function prepareDemoStore (database: Database): Promise<DemoStore> {
  const loadedDemo = await countProducts(database.db) === 0
  if (loadedDemo) await importCatalog(database, demoCatalog())
  const key = await countApiKeys(database.db) === 0
    ? (await createKey(database, newKey({ name: 'demo', scopes: SCOPES }))).key
    : null
  return { loadedDemo, key }
}
