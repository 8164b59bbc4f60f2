// One database type for both drivers: postgres.js on a real PostgreSQL, PGlite embedded.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { pg_trgm as pgTrgm } from '@electric-sql/pglite/contrib/pg_trgm'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS } from '../config.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import * as schema from './schema.ts'

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>
/** A database or a transaction: query modules accept either. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0] | Db

export interface Database {
  db: Db
  kind: 'postgres' | 'pglite'
  /** Resolves when the database answers a trivial query. */
  ping: () => Promise<void>
  /** Connections the pool may open, has open, and has busy (as PostgreSQL sees them). */
  poolStats: () => Promise<{ max: number, open: number, active: number }>
  close: () => Promise<void>
}

export const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url))

export interface OpenOptions {
  /** postgres:// URL; absent means PGlite. */
  url?: string | undefined
  /** PGlite data directory; absent means in memory. */
  dataDir?: string | undefined
  poolSize?: number
  /** Longest a statement may run (ms); the server's default keeps a stuck query from hanging a request. */
  statementTimeoutMs?: number
  /** PGlite's buffer cache (PostgreSQL's shared_buffers), MB; it is resident from the start. Default 128. */
  pgliteBuffersMb?: number
}

export async function openDatabase (options: OpenOptions): Promise<Database> {
  if (options.url) {
    const max = options.poolSize ?? DEFAULT_POOL_SIZE
    // Unique per process, so pg_stat_activity tells this instance's connections apart.
    const applicationName = `storefront-api/${hostname()}/${process.pid}`
    const client = postgres(options.url, {
      max,
      connect_timeout: 5,
      idle_timeout: 60,
      // Reconnect attempts at most a second apart, so a request during an outage fails fast
      // and the pool recovers within a second of the database's return (the default grows to 20 s).
      backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
      // No start-up query for array type ids: it can reject unhandled while the database is
      // down. Drizzle maps its array columns itself; raw queries return arrays as JSON.
      fetch_types: false,
      onnotice: () => {},
      // Bounded so an unreachable or stuck database fails a request instead of hanging it.
      connection: { application_name: applicationName, jit: 'off', statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS, idle_in_transaction_session_timeout: 30000 }
    })
    const db = drizzlePostgres(preparedStatements(client), { schema }) as unknown as Db
    return {
      db,
      kind: 'postgres',
      ping: async () => { await client`select 1` },
      poolStats: async () => {
        const [row] = await client<Array<{ open: number, active: number }>>`
          select count(*)::int as open, (count(*) filter (where state <> 'idle'))::int - 1 as active
          from pg_stat_activity where application_name = ${applicationName}`
        return { max, open: row!.open, active: Math.max(0, row!.active) }
      },
      close: async () => { await client.end({ timeout: 5 }) }
    }
  }
  const releaseLock = options.dataDir ? lockDataDir(options.dataDir) : () => {}
  try {
    const startParams = options.pgliteBuffersMb ? [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.pgliteBuffersMb}MB`] : undefined
    const client = await PGlite.create({ dataDir: options.dataDir, extensions: { pg_trgm: pgTrgm }, startParams })
    const db = drizzlePglite(client, { schema }) as unknown as Db
    return {
      db,
      kind: 'pglite',
      ping: async () => { await client.query('select 1') },
      poolStats: async () => ({ max: 1, open: 1, active: 0 }),
      close: async () => {
        await client.close()
        releaseLock()
      }
    }
  } catch (err) {
    releaseLock()
    throw err
  }
}

/**
 * Drizzle sends its queries unprepared, so PostgreSQL plans the catalogue's JSON queries on
 * every call (planning cost several times the execution). postgres.js prepares a statement
 * once per connection and query text when asked; this asks for every query, in
 * transactions too.
 */
function preparedStatements<T extends postgres.Sql | postgres.TransactionSql> (client: T): T {
  return new Proxy(client, {
    get (target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, params?: unknown[], options?: object) => target.unsafe(query, params as never, { ...options, prepare: true })
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const callback = args.pop() as (tx: postgres.TransactionSql) => unknown
          return (target as postgres.Sql).begin(...(args as [string]), (tx) => callback(preparedStatements(tx)))
        }
      }
      return Reflect.get(target, property, receiver)
    }
  })
}

/**
 * PGlite is one process's database: a second process on the same directory would corrupt
 * it. A lock file with the owner's pid turns that into a clear error.
 */
function lockDataDir (dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true })
  const lockFile = join(dataDir, 'storefront.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' })
      return () => rmSync(lockFile, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = Number(readFileSync(lockFile, 'utf8'))
      if (isAlive(owner)) {
        throw new Error(`the embedded database in ${dataDir} is in use by process ${owner}: stop it first, or use DATABASE_URL`)
      }
      rmSync(lockFile, { force: true })
    }
  }
  throw new Error(`cannot lock the embedded database in ${dataDir}`)
}

function isAlive (pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Applies the committed migrations; safe when several instances start at once. */
export async function migrateDatabase (database: Database, url?: string): Promise<void> {
  if (database.kind === 'pglite') {
    await migratePglite(database.db as never, { migrationsFolder })
    return
  }
  // A single connection, so the advisory lock and the migration share a session.
  const client = postgres(url!, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    await client`select pg_advisory_lock(${ADVISORY_LOCKS.migration})`
    await migratePostgres(drizzlePostgres(client), { migrationsFolder })
    await client`select pg_advisory_unlock(${ADVISORY_LOCKS.migration})`
  } finally {
    await client.end({ timeout: 5 })
  }
}

/** Rows of a raw `db.execute`, whatever the driver returns them in. */
export function rowsOf<T> (result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

export async function execute<T> (db: Tx, query: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await db.execute(query))
}

/** A LIKE pattern matching `text` anywhere; its own %, _ and backslash are taken literally. */
export function containing (text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}
