// Fills a migrated database for a benchmark: the generated catalogue through the same import
// path as `storefront catalog import`, and an API key with every scope.
import { sql } from 'drizzle-orm'
import { createApiKey } from '../db/api-keys.ts'
import { importCatalog } from '../db/catalog.ts'
import type { Database } from '../db/client.ts'
import { SCOPES } from '../lib/api-key-secret.ts'
import { checkCatalog } from '../lib/catalog-file.ts'
import type { BenchCatalog } from './catalog.ts'

// One transaction per batch keeps a 100k import's memory and lock time bounded.
const BATCH = 5000

/** The key's own rate limit: far above what a run can send, so the limiter is exercised but never refuses. */
export const BENCH_RATE_LIMIT = 1_000_000_000

/**
 * Imports the catalogue and makes a key. `analyze` refreshes the planner's statistics, as
 * PostgreSQL's autovacuum would within a minute or so; PGlite runs no autovacuum (a table
 * of 50,000 fresh rows stays unanalysed there), so without it PGlite plans without statistics.
 */
export async function seedStore (database: Database, bench: BenchCatalog, options: { analyze: boolean }): Promise<{ key: string, importMs: number }> {
  const started = performance.now()
  const { categories, brands, products = [] } = bench.catalog
  for (let i = 0; i < Math.max(products.length, 1); i += BATCH) {
    const batch = { ...(i === 0 ? { categories, brands } : {}), products: products.slice(i, i + BATCH) }
    await importCatalog(database, checkCatalog(batch))
  }
  const importMs = performance.now() - started
  if (options.analyze) await database.db.execute(sql`analyze`)
  const { key } = await createApiKey(database.db, { name: 'bench', scopes: [...SCOPES], rateLimit: BENCH_RATE_LIMIT })
  return { key, importMs }
}
