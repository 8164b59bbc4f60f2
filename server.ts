// Runs the service: opens the database, prepares the embedded store, listens, and closes
// gracefully on SIGTERM/SIGINT.
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { countApiKeys, createApiKey } from './db/api-keys.ts'
import { importCatalog } from './db/catalog.ts'
import { migrateDatabase, openDatabase, type Database } from './db/client.ts'
import { countProducts } from './db/products.ts'
import { SCOPES } from './lib/api-key-secret.ts'
import { demoCatalog } from './services/demo-catalog.ts'

/** The known postgres.js socket fault (porsager/postgres#1154): the pool recovers from it. */
export function isDriverSocketFault (err: unknown): boolean {
  return err instanceof TypeError && /[\\/]postgres[\\/](src|cjs[\\/]src)[\\/]connection\.js/.test(err.stack ?? '')
}

/** Embedded first run: a demo catalogue when the store is empty, a key with every scope when there is none. */
async function prepareDemoStore (database: Database): Promise<{ loadedDemo: boolean, key: string | null }> {
  const loadedDemo = await countProducts(database.db) === 0
  if (loadedDemo) await importCatalog(database, demoCatalog())
  const key = await countApiKeys(database.db) === 0
    ? (await createApiKey(database.db, { name: 'demo', scopes: [...SCOPES] })).key
    : null
  return { loadedDemo, key }
}

export async function serve (config: Config): Promise<void> {
  const embedded = config.DATABASE_URL === undefined
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR })
  if (embedded || config.MIGRATE_ON_START) await migrateDatabase(database, config.DATABASE_URL)
  const demo = embedded ? await prepareDemoStore(database) : null

  const app = await buildApp({ config, database })
  const shutdown = async () => {
    app.draining = true
    await app.close()
    await database.close()
  }
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT, skip: ['uncaughtException', 'unhandledRejection'] }, async ({ signal }) => {
    app.log.info({ signal }, 'closing: finishing requests in flight')
    await shutdown()
  })
  const onFatal = (err: unknown) => {
    // postgres.js 3.4 can throw from its socket handling while the database drops
    // connections (porsager/postgres#1154); the pool reconnects by itself, so that one is
    // logged, not fatal. Anything else closes the instance gracefully and exits 1.
    if (isDriverSocketFault(err)) {
      app.log.error({ err }, 'database driver fault during a connection loss; continuing')
      return
    }
    app.log.fatal({ err }, 'unexpected error: closing')
    setTimeout(() => process.exit(1), config.SHUTDOWN_TIMEOUT).unref()
    shutdown().finally(() => process.exit(1))
  }
  process.on('uncaughtException', onFatal)
  process.on('unhandledRejection', onFatal)
  const address = await app.listen({ host: config.HOST, port: config.PORT })

  if (demo) {
    const base = config.PUBLIC_BASE_URL ?? address.replace('0.0.0.0', '127.0.0.1')
    const lines = [`storefront-api is serving the embedded database in ${config.DATA_DIR} at ${base}`]
    if (demo.loadedDemo) lines.push('Loaded the demo catalogue.')
    if (demo.key) {
      lines.push(
        'Demo API key with every scope (shown only this once; stored only as a hash):',
        `  ${demo.key}`,
        'Try it:',
        `  curl -H "X-Api-Key: ${demo.key}" ${base}/external/v1/products`
      )
    } else {
      lines.push('API keys exist already; make another with: npx storefront keys create --name NAME --scopes products:list,products:find')
    }
    lines.push(`API reference: ${base}/docs`)
    process.stdout.write(`\n${lines.join('\n')}\n\n`)
  }
}
