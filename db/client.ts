// One database type for both drivers: postgres.js on a real PostgreSQL, PGlite embedded.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect, type PgDatabase, type PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePostgres, PostgresJsSession, PostgresJsTransaction } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS, replicaUrls, type Config } from '../config.ts'
import { databaseAddress } from '../lib/database-failure.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import { ReplicaSet, type ReplicaStatus } from './replicas.ts'
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
  /** 'transaction' when the connections go through a transaction-mode pooler. */
  pooler: Pooler
  /** Whether catalogue reads may go to replicas (DATABASE_REPLICA_URLS). */
  replicated: boolean
  /** The session connection to the primary that migrations use, when it is not the pool's own. */
  directUrl?: string | undefined
  /**
   * Runs a catalogue read (products, categories, brands) on a replica that has replayed what
   * the feed has shown and this instance's catalogue version, or else on the primary.
   * `catalogVersion` is the version the caller's cache is keyed on.
   */
  readCatalog: <T>(catalogVersion: string, run: (db: Db) => Promise<T>) => Promise<T>
  /**
   * Runs `run` in one READ ONLY, REPEATABLE READ transaction on the primary: every statement
   * in it reads the one snapshot its first statement took. Behind a transaction pooler too:
   * the isolation goes with BEGIN itself, before the timeouts set inside the transaction.
   */
  snapshot: <T>(run: (tx: Tx) => Promise<T>) => Promise<T>
  /** Catalogue reads answered by each database (`primary`, `replica1`…) and each replica's state. */
  readStats: () => { reads: Record<string, number>, replicas: ReplicaStatus[] }
  /**
   * Samples the replicas' replay positions (the background work runs it every STATE_POLL_MS);
   * resolves with a line for each replica that has just stopped answering, naming it (replica N,
   * host:port) and the cause. Nothing without replicas.
   */
  sampleReplicas: () => Promise<string[]>
}

export type Pooler = 'none' | 'transaction'

/** A database the service cannot use as configured; `message` is the whole line for the operator. */
export class DatabaseSetupError extends Error {
  readonly code: 'POOLER_MISMATCH' | 'DIRECT_URL_REQUIRED'
  constructor (code: DatabaseSetupError['code'], message: string) {
    super(message)
    this.code = code
  }
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
  /** 'transaction' behind PgBouncer (or any transaction-mode pooler); PGlite ignores it. */
  pooler?: Pooler
  /** Named prepared statements even behind a transaction pooler (one that supports them). */
  poolerPrepared?: boolean
  /** A session connection to the primary for migrations; needed behind a transaction pooler. */
  directUrl?: string | undefined
  /** Streaming replicas of the primary for catalogue reads. */
  replicaUrls?: string[]
  /** How recent a sample must be for a replica to answer (READ_SETTLE_MS). */
  replicaSettleMs?: number
}

/** What the configuration says about where the databases are; the caller adds pool size and timeouts. */
export function connectionOptions (config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR' | 'DATABASE_POOLER' | 'DATABASE_POOLER_PREPARED' | 'DATABASE_DIRECT_URL' | 'DATABASE_REPLICA_URLS' | 'READ_SETTLE_MS'>): OpenOptions {
  return {
    url: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    pooler: config.DATABASE_POOLER,
    poolerPrepared: config.DATABASE_POOLER_PREPARED,
    directUrl: config.DATABASE_DIRECT_URL,
    replicaUrls: replicaUrls(config.DATABASE_REPLICA_URLS),
    replicaSettleMs: config.READ_SETTLE_MS
  }
}

interface ClientOptions { max: number, statementTimeoutMs: number, pooler: Pooler, prepare: boolean }

/**
 * A postgres.js pool. Behind a transaction pooler a server connection serves a different
 * client at every transaction, so nothing may live in the session: only the start-up
 * parameters PgBouncer accepts are sent, and the timeouts are set inside each transaction.
 */
function openClient (url: string, applicationName: string, options: ClientOptions): postgres.Sql {
  const timeouts = { jit: 'off', statement_timeout: options.statementTimeoutMs, idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS }
  return postgres(url, {
    max: options.max,
    connect_timeout: 5,
    idle_timeout: 60,
    // Reconnect attempts at most a second apart, so a request during an outage fails fast
    // and the pool recovers within a second of the database's return (the default grows to 20 s).
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    // No start-up query for array type ids: it can reject unhandled while the database is
    // down. Drizzle maps its array columns itself; raw queries return arrays as JSON.
    fetch_types: false,
    prepare: options.prepare,
    // Nothing pipelined behind a statement outside a transaction: PgBouncer (1.18) hands the
    // server connection to another client at its ReadyForQuery, and what was already sent
    // behind it (postgres.js's describe step of an unprepared query) is answered to no one,
    // leaving that query waiting forever.
    ...(options.pooler === 'transaction' ? { max_pipeline: 0 } : {}),
    onnotice: () => {},
    // Bounded so an unreachable or stuck database fails a request instead of hanging it.
    connection: options.pooler === 'transaction' ? { application_name: applicationName } : { application_name: applicationName, ...timeouts }
  })
}

const IDLE_IN_TRANSACTION_MS = 30_000

export async function openDatabase (options: OpenOptions): Promise<Database> {
  if (options.url) {
    const max = options.poolSize ?? DEFAULT_POOL_SIZE
    const pooler = options.pooler ?? 'none'
    const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS
    const prepare = pooler === 'none' || options.poolerPrepared === true
    // Unique per process, so pg_stat_activity tells this instance's connections apart.
    const applicationName = `storefront-api/${hostname()}/${process.pid}`
    const clientOptions = { max, statementTimeoutMs, pooler, prepare }
    const client = openClient(options.url, applicationName, clientOptions)
    if (pooler === 'none') await refuseHiddenPooler(client, options.url)
    const wrap = (c: postgres.Sql) => drizzlePostgres(sessionless(c, clientOptions), { schema }) as unknown as Db
    const db = wrap(client)
    const replicas = (options.replicaUrls ?? []).map((url, i) => {
      const replicaClient = openClient(url, applicationName, clientOptions)
      return { name: `replica${i + 1}`, role: `replica ${i + 1}` as const, url, client: replicaClient, db: wrap(replicaClient) }
    })
    const replicaSet = new ReplicaSet(client, replicas, { settleMs: options.replicaSettleMs ?? 750 })
    return {
      db,
      kind: 'postgres',
      pooler,
      replicated: replicas.length > 0,
      directUrl: options.directUrl,
      ping: async () => { await client`select 1` },
      poolStats: async () => {
        const [row] = await client<Array<{ open: number, active: number }>>`
          select count(*)::int as open, (count(*) filter (where state <> 'idle'))::int - 1 as active
          from pg_stat_activity where application_name = ${applicationName}`
        return { max, open: row!.open, active: Math.max(0, row!.active) }
      },
      readCatalog: (catalogVersion, run) => replicas.length === 0 ? countPrimary(replicaSet, run(db)) : replicaSet.read(db, catalogVersion, run),
      // The isolation goes in BEGIN: Drizzle would set it by a statement of its own, which
      // must come first, and behind a pooler the timeouts' statement already has.
      snapshot: async (run) => sessionless(client, clientOptions).begin('isolation level repeatable read read only',
        (tx) => run(new PostgresJsTransaction(dialect, new PostgresJsSession(tx as unknown as postgres.Sql, dialect, undefined) as never, undefined) as unknown as Tx)) as never,
      readStats: () => ({ reads: Object.fromEntries(replicaSet.reads), replicas: replicaSet.status() }),
      sampleReplicas: async () => replicas.length === 0 ? [] : replicaSet.sample(),
      close: async () => {
        await Promise.all([client, ...replicas.map((r) => r.client)].map((c) => c.end({ timeout: 5 })))
      }
    }
  }
  const releaseLock = options.dataDir ? lockDataDir(options.dataDir) : () => {}
  try {
    // Loaded only here: on PostgreSQL its modules would take memory for nothing (their import alone: 3 MB of RSS on Node 20, 7 on 24).
    const [{ PGlite }, { pg_trgm: pgTrgm }, { drizzle: drizzlePglite }] = await Promise.all([
      import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm'), import('drizzle-orm/pglite')
    ])
    const startParams = options.pgliteBuffersMb ? [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.pgliteBuffersMb}MB`] : undefined
    const client = await PGlite.create({ dataDir: options.dataDir, extensions: { pg_trgm: pgTrgm }, startParams })
    const db = drizzlePglite(client, { schema }) as unknown as Db
    const reads = { reads: new Map([['primary', 0]]) }
    return {
      db,
      kind: 'pglite',
      ping: async () => { await client.query('select 1') },
      poolStats: async () => ({ max: 1, open: 1, active: 0 }),
      pooler: 'none',
      replicated: false,
      readCatalog: (_version, run) => countPrimary(reads, run(db)),
      snapshot: (run) => db.transaction(run, { isolationLevel: 'repeatable read', accessMode: 'read only' }),
      readStats: () => ({ reads: Object.fromEntries(reads.reads), replicas: [] }),
      sampleReplicas: async () => [],
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

async function countPrimary<T> (counter: { reads: Map<string, number> }, read: Promise<T>): Promise<T> {
  const result = await read
  counter.reads.set('primary', (counter.reads.get('primary') ?? 0) + 1)
  return result
}

/**
 * PgBouncer answers a start-up parameter it does not know with an error and closes: the
 * connection string points at a transaction pooler although DATABASE_POOLER says none.
 * Any other failure is left to the first real query, which reports it as it always has.
 */
async function refuseHiddenPooler (client: postgres.Sql, url: string): Promise<void> {
  try {
    await client`select 1`
  } catch (err) {
    const refused = /unsupported startup parameter:?\s*(\S+)/i.exec((err as Error).message ?? '')
    if (refused === null) return
    await client.end({ timeout: 1 })
    throw new DatabaseSetupError('POOLER_MISMATCH',
      `the database at ${databaseAddress(url)} (primary) is behind a transaction pooler (it refused the start-up parameter ${refused[1]}): set DATABASE_POOLER=transaction`)
  }
}

/**
 * What every query and transaction is sent with.
 *
 * Directly on PostgreSQL, every query is prepared: Drizzle sends its queries unprepared, so
 * PostgreSQL would plan the catalogue's JSON queries on every call (planning cost several
 * times the execution); postgres.js prepares a statement once per connection and query
 * text when asked. Prepared is not yet planned once: PostgreSQL's plan cache still plans a
 * prepared statement again on every call while it judges its generic plan costlier than a
 * custom one, as it did for array parameters; the hot statements are written so it keeps
 * the generic plan (test/db/plans.test.ts).
 *
 * Behind a transaction pooler a named statement lives on a server connection the next
 * transaction may not get, so nothing is prepared (unless DATABASE_POOLER_PREPARED), and the
 * timeouts a session would carry are set at the start of each transaction (SET LOCAL ends
 * with it). A statement outside a transaction is cancelled by the client past the statement
 * timeout, which PgBouncer forwards to the server running it.
 */
function sessionless<T extends postgres.Sql | postgres.TransactionSql> (client: T, options: ClientOptions, inTransaction = false): T {
  const pooled = options.pooler === 'transaction'
  return new Proxy(client, {
    get (target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, params?: unknown[], queryOptions?: object) => {
          const pending = target.unsafe(query, params as never, { ...queryOptions, prepare: options.prepare })
          if (pooled && !inTransaction && options.statementTimeoutMs > 0) cancelAfter(pending, options.statementTimeoutMs)
          return pending
        }
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const callback = args.pop() as (tx: postgres.TransactionSql) => unknown
          return (target as postgres.Sql).begin(...(args as [string]), async (tx) => {
            if (pooled) {
              await tx.unsafe('select set_config(\'statement_timeout\', $1, true), set_config(\'idle_in_transaction_session_timeout\', $2, true)',
                [String(options.statementTimeoutMs), String(IDLE_IN_TRANSACTION_MS)], { prepare: options.prepare })
            }
            return callback(sessionless(tx, options, true))
          })
        }
      }
      return Reflect.get(target, property, receiver)
    }
  })
}

/** Cancels a query still running after `ms`; the error is PostgreSQL's 57014, as a statement timeout's. */
function cancelAfter (query: PromiseLike<unknown> & { cancel: () => void }, ms: number): void {
  const timer = setTimeout(() => { query.cancel() }, ms)
  const clear = () => clearTimeout(timer)
  query.then(clear, clear)
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

/**
 * Applies the committed migrations; safe when several instances start at once. On
 * PostgreSQL it runs on a session connection to the primary (DATABASE_DIRECT_URL when set):
 * the migration lock is a session advisory lock, which a transaction pooler cannot hold.
 */
export async function migrateDatabase (database: Database, url?: string): Promise<void> {
  if (database.kind === 'pglite') {
    const { migrate: migratePglite } = await import('drizzle-orm/pglite/migrator')
    await migratePglite(database.db as never, { migrationsFolder })
    return
  }
  const target = database.directUrl ?? (database.pooler === 'transaction' ? undefined : url)
  if (target === undefined) {
    throw new DatabaseSetupError('DIRECT_URL_REQUIRED',
      'migrate needs DATABASE_DIRECT_URL (a session connection to the primary) when DATABASE_POOLER=transaction')
  }
  // A single connection, so the advisory lock and the migration share a session.
  const client = postgres(target, { max: 1, onnotice: () => {}, connect_timeout: 5 })
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

/**
 * SQL whose text is fixed when its module loads, with positional parameters ($1…): run by
 * `runStatement` straight through the driver, with nothing built per call. On PostgreSQL
 * directly, postgres.js prepares it once per connection (the same text every time).
 */
export interface Statement { readonly text: string }

const dialect = new PgDialect()

/** A statement from Drizzle SQL without parameters (`$n` written in it), rendered once. */
export function statement (query: SQL): Statement {
  const { sql: text, params } = dialect.sqlToQuery(query)
  if (params.length > 0) throw new Error('statement: write its parameters as $n, not as values')
  return { text }
}

// What Drizzle's raw queries get from PGlite: timestamps, intervals and dates as text.
const PGLITE_RAW = {
  rowMode: 'object' as const,
  parsers: Object.fromEntries([1114, 1184, 1186, 1082, 1231, 1115, 1185, 1187, 1182].map((type) => [type, (value: string) => value]))
}

type PostgresClient = { unsafe: (text: string, params: unknown[]) => Promise<unknown[]> & { raw: () => Promise<unknown[]> } }
type DriverClient = PostgresClient | { query: (text: string, params: unknown[], options: typeof PGLITE_RAW) => Promise<{ rows: unknown[] }> }

/** The driver's client Drizzle holds for `db` (a database or a transaction). */
const driverClient = (db: Tx) => (db as unknown as { session: { client: DriverClient } }).session.client

/** Runs a statement in `db` (a database or a transaction: the driver's client Drizzle holds for it). */
export async function runStatement<T> (db: Tx, query: Statement, params: unknown[]): Promise<T[]> {
  const client = driverClient(db)
  if ('unsafe' in client) return await client.unsafe(query.text, params) as T[]
  return (await client.query(query.text, params, PGLITE_RAW)).rows as T[]
}

/** A column's value as PostgreSQL sent it (text format), not decoded; null for NULL. */
export type RawValue = Buffer | null

/**
 * Runs a statement in `db` on PostgreSQL and answers each row as its columns' bytes, in the
 * statement's column order, without decoding them: for bytes passed on as they came.
 */
export async function runRaw (db: Tx, query: Statement): Promise<RawValue[][]> {
  const client = driverClient(db)
  if (!('unsafe' in client)) throw new Error('runRaw: PostgreSQL only')
  return await client.unsafe(query.text, []).raw() as RawValue[][]
}

/** A LIKE pattern matching `text` anywhere; its own %, _ and backslash are taken literally. */
export function containing (text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}
