// Runs the service: opens the database, prepares the embedded store, listens, and closes
// gracefully on SIGTERM/SIGINT.
import closeWithGrace from 'close-with-grace'
import { buildApp, type App } from './app.ts'
import type { Config } from './config.ts'
import { countApiKeys, createApiKey } from './db/api-keys.ts'
import { importCatalog } from './db/catalog.ts'
import { connectionOptions, migrateDatabase, openDatabase, type Database } from './db/client.ts'
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

/** Why the service could not start, as one line for the operator: no stack, no SQL. */
export class StartupError extends Error {}

interface ErrorLike { code?: unknown, message?: unknown, cause?: unknown }

/** The innermost error of a `cause` chain that carries a code (the driver's or the socket's), else the innermost. */
function rootCause (err: unknown): ErrorLike {
  let innermost: ErrorLike = {}
  let coded: ErrorLike | undefined
  for (let e: unknown = err, depth = 0; e instanceof Object && depth < 10; e = (e as ErrorLike).cause, depth++) {
    innermost = e as ErrorLike
    if (typeof innermost.code === 'string') coded = innermost
  }
  return coded ?? innermost
}

function firstLine (value: unknown): string {
  return String(value ?? 'unknown error').split('\n')[0]!.trim()
}

/** host:port of a postgres:// URL, without the user or password. */
export function databaseAddress (url: string): string {
  try {
    const { hostname, port } = new URL(url)
    if (hostname) return `${hostname}:${port || '5432'}`
  } catch {}
  // Several hosts (a,b:5433) are no valid URL: the part between @ and the path names them.
  return /^[^:]+:\/\/(?:[^@/]*@)?([^/?]*)/.exec(url)?.[1] || 'localhost:5432'
}

const CONNECTION_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved',
  ETIMEDOUT: 'the connection timed out',
  CONNECT_TIMEOUT: 'the connection timed out',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  CONNECTION_CLOSED: 'the connection was closed',
  CONNECTION_ENDED: 'the connection was closed',
  CONNECTION_DESTROYED: 'the connection was closed',
  SASL_SIGNATURE_MISMATCH: 'authentication failed',
  AUTH_TYPE_NOT_IMPLEMENTED: 'authentication failed: the server asks for an unsupported method'
}

/**
 * The database's failure in the operator's words. Drizzle wraps a failed query with its SQL
 * text ("Failed query: …"); the driver's error underneath says what actually happened.
 */
export function describeDatabaseFailure (err: unknown, config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR'>): string {
  const cause = rootCause(err)
  const code = typeof cause.code === 'string' ? cause.code : ''
  const message = firstLine(cause.message)
  // A setting the operator must change: the error's message is already the whole line.
  if (code === 'POOLER_MISMATCH' || code === 'DIRECT_URL_REQUIRED') return message
  if (config.DATABASE_URL === undefined) {
    // The lock file's message already says what to do.
    if (/^the embedded database in .* is in use/.test(message)) return message
    return code ? `cannot open the embedded database in ${config.DATA_DIR}: ${message}` : `cannot start: ${message}`
  }
  const at = databaseAddress(config.DATABASE_URL)
  if (CONNECTION_FAILURES[code]) return `cannot reach the database at ${at}: ${CONNECTION_FAILURES[code]}`
  // SQLSTATE 08 connection exceptions, 28 authentication, 3D unknown database, 57P0 shutting
  // down or starting up, 53300 too many connections: the server's own message names the problem.
  if (/^(08|28|3D|57P0|53300)/.test(code)) return `cannot reach the database at ${at}: ${message}`
  if (/^[0-9A-Z]{5}$/.test(code)) return `the database at ${at} refused the start-up: ${message}`
  return `cannot start: ${message}`
}

const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'the address is in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved'
}

export function describeListenFailure (err: unknown, config: Pick<Config, 'HOST' | 'PORT'>): string {
  const cause = rootCause(err)
  const host = config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST
  const reason = LISTEN_FAILURES[String(cause.code)] ?? firstLine(cause.message)
  return `cannot listen on ${host}:${config.PORT}: ${reason}`
}

export async function serve (config: Config): Promise<void> {
  const embedded = config.DATABASE_URL === undefined
  let database: Database
  try {
    database = await openDatabase({ ...connectionOptions(config), poolSize: config.DB_POOL_SIZE, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS })
  } catch (err) {
    throw new StartupError(describeDatabaseFailure(err, config))
  }

  let app: App | undefined
  let demo: Awaited<ReturnType<typeof prepareDemoStore>> | null = null
  // What a failed start leaves open would keep the process alive after its error.
  const abandon = async (reason: string): Promise<never> => {
    try {
      if (app) await app.close()
    } catch {}
    try {
      await database.close()
    } catch {}
    throw new StartupError(reason)
  }
  try {
    if (embedded || config.MIGRATE_ON_START) await migrateDatabase(database, config.DATABASE_URL)
    demo = embedded ? await prepareDemoStore(database) : null
    app = await buildApp({ config, database })
  } catch (err) {
    return abandon(describeDatabaseFailure(err, config))
  }
  const started = app

  const shutdown = async () => {
    started.draining = true
    await started.close()
    await database.close()
  }
  const graceful = closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT, skip: ['uncaughtException', 'unhandledRejection'] }, async ({ signal }) => {
    started.log.info({ signal }, 'closing: finishing requests in flight')
    await shutdown()
  })
  const onFatal = (err: unknown) => {
    // postgres.js 3.4 can throw from its socket handling while the database drops
    // connections (porsager/postgres#1154); the pool reconnects by itself, so that one is
    // logged, not fatal. Anything else closes the instance gracefully and exits 1.
    if (isDriverSocketFault(err)) {
      started.log.error({ err }, 'database driver fault during a connection loss; continuing')
      return
    }
    started.log.fatal({ err }, 'unexpected error: closing')
    setTimeout(() => process.exit(1), config.SHUTDOWN_TIMEOUT).unref()
    shutdown().finally(() => process.exit(1))
  }
  process.on('uncaughtException', onFatal)
  process.on('unhandledRejection', onFatal)
  let address: string
  try {
    address = await started.listen({ host: config.HOST, port: config.PORT })
  } catch (err) {
    graceful.uninstall()
    process.off('uncaughtException', onFatal)
    process.off('unhandledRejection', onFatal)
    return abandon(describeListenFailure(err, config))
  }

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
      // This process holds the embedded database until it stops: a second process cannot open it.
      lines.push(
        'API keys exist already. To make another, stop this server first (Ctrl+C): it holds the',
        `embedded database in ${config.DATA_DIR}, so commands cannot open it while it runs. Then run:`,
        '  npx storefront keys create --name NAME --scopes products:list,products:find',
        'and start it again. With PostgreSQL (DATABASE_URL), operator commands run beside the server.'
      )
    }
    lines.push(`API reference: ${base}/docs`)
    process.stdout.write(`\n${lines.join('\n')}\n\n`)
  }
}
