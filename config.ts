// The service's configuration: one TypeBox schema, read from the environment once at start,
// shared by the server and the `storefront` command.
import envSchema from 'env-schema'
import { Type, type Static } from 'typebox'

/** Also what a database opened without configuration (a test, a script) gets. */
export const DEFAULT_POOL_SIZE = 10
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000
/**
 * The embedded database's buffer cache for operator commands, MB. PGlite keeps all of it
 * resident from the start (the server keeps PostgreSQL's 128): a `storefront` command stays
 * small, and a 100,000-product import is no slower with it.
 */
export const OPERATOR_PGLITE_BUFFERS_MB = 32
export const DEFAULT_API_TITLE = 'Storefront External API'
/**
 * A stock write that meets a deadlock or a serialization failure is run again this many times
 * in all, after a jittered pause of about baseDelayMs × attempt; then it answers 503.
 */
export const STOCK_RETRY = { attempts: 4, baseDelayMs: 20 } as const
/** An address as a mail client takes it: one @, a dot in the domain, nothing that would need quoting. */
const EMAIL = /^[^\s@<>()[\]",;:\\]+@[^\s@<>()[\]",;:\\]+\.[^\s@<>()[\]",;:\\.]+$/

/** About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h: retries spread over about a day and a half. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5,300,1800,7200,18000,36000,36000'

/** WEBHOOK_RETRY_SCHEDULE as milliseconds. */
export function retryScheduleMs (value: string): number[] {
  return value.split(',').map((s) => Math.round(Number(s.trim()) * 1000))
}

/** WEBHOOK_ALLOWED_HOSTS as a list of lower-case host or host:port. */
export function allowedHosts (value: string): string[] {
  return value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)
}

export const ConfigSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({
    pattern: '^postgres(ql)?://',
    description: 'PostgreSQL URL; unset means the embedded PGlite database in DATA_DIR'
  })),
  DATA_DIR: Type.String({ default: './data', minLength: 1, description: 'Where the embedded database lives' }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$', description: 'Absolute base URL used in Location headers' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  RATE_LIMIT_MAX: Type.Integer({ default: 600, minimum: 1, description: 'Requests per window per API key' }),
  RATE_LIMIT_WINDOW: Type.Integer({ default: 60, minimum: 1, description: 'Rate-limit window in seconds' }),
  LOG_LEVEL: Type.Unsafe<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>({ type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
  TRUST_PROXY: Type.String({
    default: 'false',
    pattern: '^(true|false|\\d+|[0-9a-fA-F.:/]+(\\s*,\\s*[0-9a-fA-F.:/]+)*)$',
    description: 'false, true, a hop count, or comma-separated proxy addresses/CIDRs'
  }),
  MIGRATE_ON_START: Type.Boolean({ default: false, description: 'Apply migrations before serving (always on for the embedded database)' }),
  BODY_LIMIT: Type.Integer({ default: 1048576, minimum: 1024, description: 'Largest request body in bytes' }),
  SHUTDOWN_TIMEOUT: Type.Integer({ default: 10000, minimum: 0, description: 'Milliseconds to finish in-flight requests on SIGTERM' }),

  // Deadlines: a slow client, a stuck query or a lost database never holds a request forever.
  REQUEST_TIMEOUT_MS: Type.Integer({ default: 30000, minimum: 1000, description: 'Longest time to receive a whole request' }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ default: 60000, minimum: 1000, description: 'Idle socket timeout' }),
  HANDLER_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 100, description: 'Deadline of a request but create-order, holds and releases; past it 503 service_unavailable (a write then wrote nothing, unless its commit had begun)' }),
  ORDER_TIMEOUT_MS: Type.Integer({ default: 30000, minimum: 1000, description: 'Deadline of create-order, holds and releases from arrival (longer than their lock and statement timeouts); past it 503 and nothing written, unless the commit had begun' }),
  DB_POOL_SIZE: Type.Integer({ default: DEFAULT_POOL_SIZE, minimum: 1, maximum: 1000, description: 'PostgreSQL connections per instance' }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({ default: DEFAULT_STATEMENT_TIMEOUT_MS, minimum: 0, description: 'Longest a request\'s SQL statement may run (0: no limit)' }),
  IDEMPOTENCY_LOCK_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 100, description: 'How long a duplicate create-order waits for the first before 409 idempotency_key_in_use' }),

  // What each instance keeps in memory, and how fast it notices changes made elsewhere.
  STATE_POLL_MS: Type.Integer({ default: 250, minimum: 10, description: 'How often settings, the catalogue version and the products changed since the last poll are polled' }),
  READ_SETTLE_MS: Type.Integer({
    default: 750,
    minimum: 0,
    description: 'How long a published change waits before the changes feed shows it; an instance whose last poll is older serves no cached read, so a read that follows the feed sees the change (keep it above STATE_POLL_MS)'
  }),
  // A revoked, deactivated or rolled-away key stops working on every instance within 5 s: the
  // cache may trust a key for at most that long.
  KEY_CACHE_TTL_MS: Type.Integer({ default: 2000, minimum: 0, maximum: 5000, description: 'How long an API key is trusted before it is looked up again (0 to 5000): bounds the revocation delay' }),
  KEY_LAST_USED_FLUSH_MS: Type.Integer({ default: 5000, minimum: 100, description: 'How often keys\' last use is written' }),
  HEAP_LIMIT_MB: Type.Integer({ default: 128, minimum: 0, description: 'The server\'s heap (V8 old space) cap, MB, which `storefront serve` applies itself however it is started, with a young generation of 8 MB semi-spaces; 0: V8\'s own sizing of both' }),
  CATALOG_CACHE_MB: Type.Number({ default: 8, minimum: 0, description: 'Catalogue reads (products, pages) cached per instance, in megabytes of their JSON (the heap holds them in about twice to three times that); only reads asked for again soon are kept' }),
  SEARCH_CACHE_MB: Type.Number({ default: 4, minimum: 0, description: 'Which products each search found (a page\'s ids and the total, about 1 KB a search) cached per instance, in megabytes of their JSON, kept at the first miss; the documents are read afresh. 0 caches none' }),
  CATALOG_READ_BATCH: Type.Integer({ default: 64, minimum: 1, maximum: 1000, description: 'Most product documents (or kept list pages) one statement reads for the requests that missed the cache together' }),
  CATALOG_CACHE_MAX_MS: Type.Integer({ default: 60000, minimum: 0, description: 'Longest a cached catalogue read lives when no change is signalled' }),
  LIST_PAGES_REBUILD_MS: Type.Integer({ default: 1000, minimum: 10, description: 'How often each instance builds again the pages of the unfiltered product list whose products changed (until then those pages are read from the products\' documents, exact but slower)' }),
  LIST_PAGES_REBUILD_BATCH: Type.Integer({ default: 200, minimum: 1, maximum: 10000, description: 'Pages of the product list one rebuild builds at most (each reads its 25 documents and writes about 20 KB): bounds the database work an order flow causes' }),

  DISCOUNT_SWEEP_MS: Type.Integer({ default: 30000, minimum: 100, maximum: 60000, description: 'How often products whose discount window opened or closed get a new updatedAt (at most a minute late)' }),
  DISCOUNT_SWEEP_LOOKBACK_MS: Type.Integer({ default: 86400000, minimum: 60000, description: 'How far back the discount sweep looks for boundaries it may have missed (instances down, a restart)' }),

  EXPORT_CONCURRENCY: Type.Integer({ default: 4, minimum: 1, maximum: 1000, description: 'Exports each instance reads at once, each holding one database connection (behind a transaction pooler, one server connection) until it has read its snapshot, about as long as its client reads; more answer 503 with Retry-After. Keep it below DB_POOL_SIZE' }),
  EXPORT_IDLE_SECONDS: Type.Integer({ default: 60, minimum: 1, maximum: 86400, description: 'An export (GET …/products/export, …/orders/export) whose client reads nothing for this long is disconnected, without its last line' }),

  EVENT_PUBLISH_MS: Type.Integer({ default: 50, minimum: 5, description: 'How often committed change events are published to the changes feed' }),
  CHANGES_RETENTION_DAYS: Type.Integer({ default: 30, minimum: 1, description: 'How long the changes feed keeps events; an older cursor answers 410 cursor_expired' }),
  CHANGES_PRUNE_MS: Type.Integer({ default: 600000, minimum: 1000, description: 'How often events past their retention are deleted' }),

  // Webhooks: where they may go, how long an attempt may take, and when they are tried again.
  WEBHOOK_ALLOW_HTTP: Type.Boolean({ default: false, description: 'Accept plain http:// webhook URLs (otherwise https:// only)' }),
  WEBHOOK_ALLOWED_HOSTS: Type.String({
    default: '',
    pattern: '^[^\\s/]*(\\s*,\\s*[^\\s/]*)*$',
    description: 'Comma-separated host or host:port that webhooks may reach although they are or resolve to loopback, private or link-local addresses'
  }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100, description: 'How long a delivery attempt may take; a 2xx within it is success' }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({
    default: DEFAULT_WEBHOOK_RETRY_SCHEDULE,
    pattern: '^\\d+(\\.\\d+)?(\\s*,\\s*\\d+(\\.\\d+)?)*$',
    description: 'Seconds to wait before each retry of a failed delivery, comma-separated (each ± 20%); after the last one the delivery is failed'
  }),
  WEBHOOK_DISABLE_AFTER_MS: Type.Integer({ default: 259200000, minimum: 1, description: 'An endpoint whose deliveries fail with no success for this long (3 days) is disabled' }),
  WEBHOOK_DELIVERY: Type.Boolean({
    default: true,
    description: 'Whether this instance attempts webhook deliveries; false on instances that serve the API while others (run with it on, outside the load balancer) deliver. Every instance still queues the deliveries of what it publishes'
  }),
  WEBHOOK_POLL_MS: Type.Integer({ default: 100, minimum: 5, description: 'How often an idle instance looks for deliveries that are due (a busy one claims again as attempts end)' }),
  // An instance delivers at most WEBHOOK_CONCURRENCY ÷ a round trip a second, and a round trip
  // through a thread busy with orders takes tens of ms: at 64 the queue fell seconds behind a
  // heavy order load, at 256 it kept up, at 512 the attempts took more from the orders than
  // they gained (bench/README.md).
  WEBHOOK_CONCURRENCY: Type.Integer({ default: 256, minimum: 1, maximum: 1000, description: 'Delivery attempts each instance makes at once (and so its most connections open to endpoints)' }),
  WEBHOOK_KEEP_ALIVE_MS: Type.Integer({
    default: 10000,
    minimum: 0,
    description: 'How long a connection to an endpoint is kept idle for its next delivery (shorter when the receiver\'s Keep-Alive header says so); 0: a new connection for each attempt'
  }),
  WEBHOOK_LEASE_MS: Type.Integer({
    default: 60000,
    minimum: 1000,
    description: 'How long an instance holds a delivery it attempts (keep it above WEBHOOK_TIMEOUT_MS); one that dies mid-attempt has it retried by another after this'
  }),
  WEBHOOK_MAX_RESPONSE_BYTES: Type.Integer({ default: 65536, minimum: 0, description: 'How much of a receiver\'s answer is read before the connection is dropped' }),

  // How the API reference names the store's API and whom integrators write to.
  API_TITLE: Type.String({ default: DEFAULT_API_TITLE, minLength: 1, maxLength: 200, description: 'The title of the OpenAPI document and of the /docs page' }),
  API_CONTACT_EMAIL: Type.Optional(Type.String({ maxLength: 254, description: 'The address integrators write to, shown in the API reference; unset: no contact is shown' })),
  API_CONTACT_URL: Type.Optional(Type.String({ maxLength: 2048, description: 'An http(s) page for integrators, shown in the API reference; unset: no contact is shown' })),

  // Running at scale: a transaction pooler in front of the primary, and streaming replicas.
  DATABASE_POOLER: Type.Unsafe<'none' | 'transaction'>({
    type: 'string',
    enum: ['none', 'transaction'],
    default: 'none',
    description: 'transaction when DATABASE_URL (and each replica URL) goes through a transaction-mode pooler such as PgBouncer: no named prepared statements, only the start-up parameters it accepts, timeouts set inside each transaction'
  }),
  DATABASE_POOLER_PREPARED: Type.Boolean({ default: false, description: 'With DATABASE_POOLER=transaction, still use named prepared statements (only for a pooler that supports them, such as PgBouncer 1.21+ with max_prepared_statements)' }),
  DATABASE_DIRECT_URL: Type.Optional(Type.String({
    pattern: '^postgres(ql)?://',
    description: 'A session connection to the primary (not through a transaction pooler), for migrations and the migration lock; required by storefront migrate and MIGRATE_ON_START when DATABASE_POOLER=transaction'
  })),
  DATABASE_REPLICA_URLS: Type.Optional(Type.String({
    pattern: '^postgres(ql)?://[^\\s,]+(\\s*,\\s*postgres(ql)?://[^\\s,]+)*$',
    description: 'Comma-separated URLs of streaming replicas of the primary: catalogue reads go to one that has replayed what the feed has shown, otherwise to the primary'
  })),

  AUTH_FAILURE_LIMIT: Type.Integer({ default: 60, minimum: 1, description: 'Failed authentications per client IP and rate-limit window' }),
  MAINTENANCE_RETRY_AFTER: Type.Integer({ default: 60, minimum: 1, description: 'Retry-After seconds of store_under_maintenance' }),
  IDEMPOTENCY_TTL_HOURS: Type.Integer({ default: 24, minimum: 1, description: 'How long an Idempotency-Key replays its first response' }),
  RESERVATION_SWEEP_MS: Type.Integer({ default: 1000, minimum: 100, maximum: 4000, description: 'How often each instance expires reservations past their expiresAt and gives their units back (they are back within this, plus a sweep\'s run, of expiresAt)' }),
  RESERVATION_SWEEP_BATCH: Type.Integer({ default: 100, minimum: 1, maximum: 10000, description: 'Reservations one sweep transaction expires at most (it runs again until none is left)' }),
  IDEMPOTENCY_CLEANUP_MS: Type.Integer({ default: 3600000, minimum: 1000, description: 'How often expired Idempotency-Key records are deleted' }),
  REDIS_COMMAND_TIMEOUT_MS: Type.Integer({ default: 250, minimum: 10, description: 'A Redis command slower than this counts as Redis being down (limits fall back to the instance)' }),
  REDIS_CONNECT_TIMEOUT_MS: Type.Integer({ default: 2000, minimum: 10, description: 'How long start-up waits for Redis before serving without it' })
})

export type Config = Static<typeof ConfigSchema>

export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  // Blank values count as unset, so `PORT=` in an env file falls back to the default.
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  let config: Config
  try {
    // env: false — only `env` is read (process.env by default), so a blank value in it stays unset.
    config = envSchema<Config>({ schema: ConfigSchema, data, env: false, dotenv: false })
  } catch (err) {
    const detail = (err as Error).message.replaceAll('env/', '')
    throw new ConfigError(`invalid configuration: ${detail}`)
  }
  // A lease shorter than an attempt would let another instance attempt the same delivery at once.
  if (config.WEBHOOK_LEASE_MS <= config.WEBHOOK_TIMEOUT_MS) {
    throw new ConfigError(`invalid configuration: WEBHOOK_LEASE_MS (${config.WEBHOOK_LEASE_MS}) must be above WEBHOOK_TIMEOUT_MS (${config.WEBHOOK_TIMEOUT_MS})`)
  }
  if (config.API_CONTACT_EMAIL !== undefined && !EMAIL.test(config.API_CONTACT_EMAIL)) {
    throw new ConfigError(`invalid configuration: API_CONTACT_EMAIL (${config.API_CONTACT_EMAIL}) is not an email address such as integrations@shop.example`)
  }
  if (config.API_CONTACT_URL !== undefined && !isWebUrl(config.API_CONTACT_URL)) {
    throw new ConfigError(`invalid configuration: API_CONTACT_URL (${config.API_CONTACT_URL}) is not an absolute http:// or https:// URL`)
  }
  return config
}

function isWebUrl (text: string): boolean {
  if (/\s/.test(text)) return false
  try {
    const url = new URL(text)
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== ''
  } catch {
    return false
  }
}

export class ConfigError extends Error {}

/** DATABASE_REPLICA_URLS as a list. */
export function replicaUrls (value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)
}

/** TRUST_PROXY as Fastify's trustProxy: a boolean, a hop count, or the proxies' addresses. */
export function trustProxySetting (value: string): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (value === 'true') return true
  if (value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  return value.split(',').map((s) => s.trim())
}
