// The process's life: opens the database, prepares the embedded store, listens, and closes
// gracefully on SIGTERM/SIGINT. `storefront serve` (cli/commands/serve.ts) calls it.
import closeWithGrace from 'close-with-grace'
import { buildApp, type App } from './app.ts'
import type { Config } from './config.ts'
import { connectionOptions, migrateDatabase, openDatabase, type Database } from './db/client.ts'
import { classifyDatabaseFailure, describeDatabaseFailure, firstLine, isDriverSocketFault, primaryLocation, rootCause, sessionLocation } from './lib/database-failure.ts'
import { prepareDemoStore, type DemoStore } from './services/demo-store.ts'

/** Why the service could not start, as one line for the operator: no stack, no SQL. */
export class StartupError extends Error {}

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

/** The signals that stop the server gracefully (bin/heap.js relays the same ones). */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const
/**
 * One stop often arrives as several signals at once: a terminal's Ctrl-C, systemd's
 * control-group kill and `kill -- -PGID` reach every process of the group, npm passes on what
 * it gets, and so does the bounded launcher (bin/heap.js). Signals within this long of the
 * first are that same stop; one that comes later is someone asking again: it forces the exit.
 */
const SAME_STOP_MS = 1000

export interface Started {
  /** The address the server listens on. */
  address: string
  /** On the embedded database: what its first-run setup did; null with DATABASE_URL. */
  demo: DemoStore | null
}

export async function startServer (config: Config): Promise<Started> {
  const embedded = config.DATABASE_URL === undefined
  const where = primaryLocation(config)
  let database: Database
  try {
    database = await openDatabase({ ...connectionOptions(config), poolSize: config.DB_POOL_SIZE, statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS })
  } catch (err) {
    throw new StartupError(describeDatabaseFailure(err, where))
  }

  let app: App | undefined
  let demo: DemoStore | null = null
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
    if (embedded || config.MIGRATE_ON_START) {
      await migrateDatabase(database, config.DATABASE_URL).catch((err: unknown) => {
        throw new StartupError(describeDatabaseFailure(err, sessionLocation(config)))
      })
    }
    demo = embedded ? await prepareDemoStore(database) : null
    app = await buildApp({ config, database })
  } catch (err) {
    // A failure of the database names it; anything else (a bug) is still one line.
    if (err instanceof StartupError) return abandon(err.message)
    return abandon(embedded || classifyDatabaseFailure(err) !== null ? describeDatabaseFailure(err, where) : `cannot start: ${firstLine(rootCause(err).message)}`)
  }
  const started = app

  const shutdown = async () => {
    started.draining = true
    await started.close()
    await database.close()
  }
  // close-with-grace bounds the drain (exit 1 past SHUTDOWN_TIMEOUT, else 0); the signals are
  // taken here, where copies of one stop can be told from a second one.
  const graceful = closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT, skip: ['uncaughtException', 'unhandledRejection', ...STOP_SIGNALS] }, shutdown)
  let stopAt: number | undefined
  const onStop = (signal: NodeJS.Signals) => {
    if (stopAt === undefined) {
      stopAt = Date.now()
      started.log.info({ signal }, 'closing: finishing requests in flight')
      graceful.close()
    } else if (Date.now() - stopAt >= SAME_STOP_MS) {
      started.log.warn({ signal }, 'asked again to stop: exiting now, requests in flight are cut')
      process.exit(1)
    }
  }
  const stopListening = () => { for (const signal of STOP_SIGNALS) process.off(signal, onStop) }
  for (const signal of STOP_SIGNALS) process.on(signal, onStop)
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
    stopListening()
    process.off('uncaughtException', onFatal)
    process.off('unhandledRejection', onFatal)
    return abandon(describeListenFailure(err, config))
  }

  return { address, demo }
}
