// `npm run bench [-- --quick] [--runs 3] [--duration 10 --warmup 2 --connections 32] [--only catalogue] [--json FILE]`
//
// Loads the real app and, in the same run, its ceilings, so the figures are read as ratios
// (autocannon shares the machine's cores with the servers): for the catalogue a bare
// Fastify server that answers the same JSON from memory (one product, one 25-product page,
// one 25-order page); for order creation the same transaction in raw SQL against the same
// database (pgbench, or postgres.js without it). Each server runs alone in a child process,
// compiled as in production; the app's peak RSS (VmHWM of its process) is the server's memory.
//
// Size: 100,000 products (about 20% with variants and combinations) and 1,000,000 orders
// (60% for the bench key, 10% for each of four others) by default; --quick: 10,000 and
// 100,000; --products N and --orders N override either. The database is filled with bulk
// SQL before the app starts (bench/seed.ts, bench/orders.ts).
//
// Database: a fresh PostgreSQL database `sf_bench_<random>` when BENCH_DATABASE_URL (or
// DATABASE_URL) is set, dropped at the end; otherwise an in-memory PGlite, which then lives
// in the app's process (and counts in its memory), filled anew for each run. The order
// reads need PostgreSQL (the orders table is bulk-filled with SQL), and so does the raw-SQL
// side of order creation.
//
// A run: the app and the bare server start, every scenario runs in turn (warm-up, then the
// measured load), both stop. --runs N repeats the run N times against the same database and
// prints the median of each figure; aims are judged on the medians.
//
// Scenarios, in the order they run (`--only` takes names and groups, comma-separated; a
// scenario's ceiling runs with it):
//   catalogue:    bare-product, product, bare-list, list, list-filtered, search, crawl-cursor
//   order-reads:  bare-orders, orders-page-1, orders-deep, orders-number, orders-name
//   feed:         feed-read, feed-read-500, feed-sequential (`changes` names the group too)
//   order-create: order-create-raw-nofeed, order-create-raw, order-create, order-create-webhooks
//   orders:       order-reads and order-create
//   export:       products-export-floor, products-export, orders-export-floor, orders-export
// crawl-cursor and feed-sequential are fixed pieces of work (the whole product list by
// cursor, the whole feed from its start, one request at a time on one connection): they run
// once a run, without warm-up, whatever --duration says. The feed scenarios read a feed of
// --events N published events (200,000; --quick 20,000) written before the app starts
// (bench/feed.ts). order-create-raw is the app's transaction with its change_events INSERT,
// order-create-raw-nofeed the same without it: their ratio is what the events cost.
// products-export reads GET /external/v1/products/export to its last line on one connection,
// orders-export the bench key's orders likewise (PostgreSQL: the bulk-filled orders); each
// runs once a run beside its floor, a bare COPY of the same rows to a postgres.js client
// (bench/exports.ts), and its ratio is the floor's time ÷ its own. The app's RSS during each
// is its memory while it streams.
// order-create-webhooks is order-create's load with 3 webhook endpoints subscribed to every
// event, each a local receiver (bench/receivers.ts, one child process); after the load the
// bench waits (up to a minute) for every event published meanwhile to reach every receiver,
// reports the latency from each event's change to its receipt (bench/webhooks.ts), and
// deletes the endpoints. Its ratio is to order-create: what delivering webhooks costs orders.
//
// Other options: --raw auto|pgbench|node (the raw-SQL driver), --pool N (the app's
// PostgreSQL pool size instead of its default, to see what the pool bounds), --profile DIR
// (a V8 CPU profile of the app's process, written when it stops, and scenario-windows.json:
// when each scenario's measured load ran, on the profile's clock, for bench/profile-summary.ts),
// --tsx (run the servers
// through tsx, no compile step; their RSS then includes tsx), --keep-database (do not drop
// the PostgreSQL database, to look into it afterwards; drop it yourself), --skip-analyze
// (no VACUUM ANALYZE after the catalogue fill: no planner statistics nor visibility map
// until autovacuum comes; nor between runs, which a server without autovacuum gets by
// default), --seed N, --json FILE (every run's figures and the medians,
// machine-readable), --delivery-instance (with PostgreSQL: the app serves the API with
// WEBHOOK_DELIVERY=false and a second instance, which no request reaches, delivers the
// webhooks; its RSS is reported apart and its CPU per delivery replaces the app's).
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { createApiKey } from '../db/api-keys.ts'
import { migrateDatabase, openDatabase } from '../db/client.ts'
import { PAGE_SIZE } from '../schemas/common.ts'
import type { Product, ProductPage } from '../schemas/products.ts'
import { compileForBench } from './build.ts'
import { countMatches, generateCatalog, namePieces, orderable, randomGenerator, type BenchCatalog } from './catalog.ts'
import { runLoad, type LoadResult } from './load.ts'
import {
  OTHER_KEYS, bulkInsertOrders, chooseOrderLines, countOrderMatches, createLineTable, feedPhase, orderBodies, orderReadTerms, pgbenchMinimalScript, pgbenchScript, raiseStock, recountOrders, runPgbench, runPgbenchPair, runRawNode, runRawNodePair,
  type BulkOrders, type LineTable
} from './orders.ts'
import { backendCpu, backendCpuByPhase, cpuTimeOf, memoryOf, serveNodeFlags, startAppServer, startBareServer, type Runtime, type Server } from './processes.ts'
import {
  SCENARIOS, catalogueScenarios, crawlScenario, exportScenarios, feedScenarios, orderCreateScenarios, orderReadScenarios, selectScenarios, type ListFilter, type Scenario, type ScenarioGroup
} from './scenarios.ts'
import { seedFeed, type SeededFeed } from './feed.ts'
import { seedStore } from './seed.ts'
import { fillRendered } from './rendered.ts'
import { setUpWebhooks } from './webhooks.ts'
import { CRAWL_ENDS, crawlByCursor, readFeedFromStart } from './sequential.ts'
import { PRODUCT_DOCUMENTS_COPY, copyToClient, orderDocumentsCopy, readWholeExport } from './exports.ts'

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    products: { type: 'string' },
    orders: { type: 'string' },
    events: { type: 'string' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '2' },
    runs: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
    raw: { type: 'string', default: 'auto' },
    pool: { type: 'string' },
    only: { type: 'string' },
    json: { type: 'string' },
    profile: { type: 'string' },
    tsx: { type: 'boolean', default: false },
    'keep-database': { type: 'boolean', default: false },
    'skip-analyze': { type: 'boolean', default: false },
    'delivery-instance': { type: 'boolean', default: false }
  }
})
const integer = (name: string, value: string | undefined, min = 1) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}`)
  return n
}
/** The size the aims are stated for, and --quick's. */
const FULL_SIZE = { products: 100_000, orders: 1_000_000, events: 200_000 }
const QUICK_SIZE = { products: 10_000, orders: 100_000, events: 20_000 }
const size = args.quick ? QUICK_SIZE : FULL_SIZE
const settings = {
  products: args.products === undefined ? size.products : integer('products', args.products),
  orders: args.orders === undefined ? size.orders : integer('orders', args.orders, 0),
  /** Published events the changes feed holds before the first run (the feed scenarios read them). */
  events: args.events === undefined ? size.events : integer('events', args.events, 0),
  durationSeconds: integer('duration', args.duration),
  connections: integer('connections', args.connections),
  warmupSeconds: integer('warmup', args.warmup, 0),
  runs: integer('runs', args.runs),
  seed: integer('seed', args.seed, 0),
  /** The app's pool size; undefined: the app's own default (as in production). */
  pool: args.pool === undefined ? undefined : integer('pool', args.pool),
  analyze: !args['skip-analyze']
}

if (!['auto', 'pgbench', 'node'].includes(args.raw)) throw new Error('--raw must be auto, pgbench or node')
/** Whose CPU a delivery is counted in. */
const DELIVERER = args['delivery-instance'] ? 'the delivery instance\'s' : 'app'

const AIMS = {
  /** product ÷ bare-product, list ÷ bare-list, order-create ÷ raw SQL. */
  ratio: 0.5,
  /** list's p99 at most this many times bare-list's. */
  listP99Factor: 4,
  /** p99 of filtered pages, searches and order reads, at AIMS.connections. */
  p99Ms: 50,
  connections: 32,
  serverMb: 200,
  /** crawl-cursor: the whole crawl within this many seconds (at 100,000 products)… */
  crawlSeconds: 30,
  /** …and its last pages no slower than this many times its first (medians of CRAWL_ENDS pages). */
  crawlLastToFirst: 2,
  /** order-create ÷ order-create-min (the least an order must do, pgbench). */
  minimalOrderRatio: 0.5,
  /** product ÷ db-product, list ÷ db-list (pre-rendered JSON read from PostgreSQL by a bare server). */
  databaseCeilingRatio: 0.8,
  /** order-create-raw ÷ order-create-raw-nofeed: the events cost at most 10% of order throughput. */
  eventCostRatio: 0.9,
  /** order-create-webhooks ÷ order-create: 3 subscribed endpoints cost at most 10% of order throughput… */
  webhookRatio: 0.9,
  /** …and every event reaches every endpoint, 99% of the deliveries within this long of the change. */
  webhookP99Ms: 1000,
  /** One instance's deliveries a second in the burst (3 endpoints answering 204 at once). */
  webhookDeliveriesPerSecond: 2000,
  /** products-export ÷ products-export-floor, orders-export ÷ orders-export-floor: the floor's time ÷ the export's. */
  exportRatio: 0.7
}
const P99_AIMED = ['list-filtered', 'search', 'orders-page-1', 'orders-deep', 'orders-number', 'orders-name']
/** order-create-webhooks: its endpoints (each a receiver), and the longest wait for their deliveries once the load is worked off. */
const WEBHOOK_RECEIVERS = 3
const WEBHOOK_WAIT_LIMIT_MS = 60_000

/** How many of the app's products the bare server holds and draws from. */
const BARE_PRODUCTS = 500
const MB = 1024 * 1024
/** Products and combinations orders are made of. */
const ORDER_LINES = 2000
/** Orders a bulk INSERT statement writes (with their items). */
const BULK_CHUNK = 100_000
/** The list page the orders-deep scenario asks for (or the last, when there are fewer). */
const DEEP_PAGE = 1000
const NAME_WIDTH = 16
/** Longest wait for the app to work off a run's queue. */
const SETTLE_LIMIT_MS = 120_000
/** How long the single-connection pass of a scenario runs. */
const ONE_CONNECTION_SECONDS = 3
/** Samples checked against the app before the first run, per kind of search. */
const CHECKED_TERMS = 5
/**
 * PostgreSQL (15 and later) publishes a backend's table and index statistics at most once a
 * second while it is busy, and within 10 s once it is idle: counters read this long after
 * the app's last request include everything it did.
 */
const STATS_FLUSH_MS = 11_000
/** Events a request of the sequential feed reader asks for: the most the feed gives, as a reader catching up asks. */
const FEED_READER_LIMIT = 500

/** When each scenario's measured load ran, in microseconds of the monotonic clock V8's CPU profiles use. */
interface ProfileWindow { run: number, appPid: number, scenario: string, startUs: number, endUs: number }
const profileWindows: ProfileWindow[] = []
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n)

/** GET /external/v1/orders's answer (schemas/orders.ts OrderPage). */
interface OrderPage { items: unknown[], page: number, pageSize: number, total: number }

/** One scenario's figures in one run. CPU is per 2xx answer (per committed transaction for raw SQL). */
interface Figures {
  okPerSecond: number
  p50: number
  p99: number
  total: number
  non2xx: number
  errors: number
  appCpuMs?: number
  dbCpuMs?: number
  /** ok/s ÷ the ceiling's ok/s, and p99 ÷ the ceiling's p99, in the same run. */
  ratio?: number
  p99Ratio?: number
  /** ok/s ÷ each further ceiling's ok/s (Scenario.ceilings), in the same run. */
  ratios?: Record<string, number>
  /** Share of requests the app answered from its read cache. */
  cacheHitRatio?: number
  oneConnection?: { okPerSecond: number, p50: number, p99: number }
  /** A scenario's own figures (bench/sequential.ts): a crawl's seconds and end latencies, a reader's events a second. */
  extra?: Record<string, number>
  /** The app's largest RSS (sampled every 100 ms) while the scenario ran, warm-up included. */
  appRssMb?: number
}
interface RunFigures {
  run: number
  results: Record<string, Figures>
  peakRssMb: number
  barePeakRssMb?: number
  loadAverage: { before: number[], after: number[] }
}

/** The V8 flags the app server runs with: those `storefront serve` gives itself (bin/heap.js), on PostgreSQL. */
const appFlags = serveNodeFlags(Boolean(process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL))
const log = (line = '') => process.stdout.write(`${line}\n`)
const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
/** A latency: whole milliseconds, one decimal below 10 ms when there is one. */
const ms = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: n < 10 ? 1 : 0 })
const seconds = (ms: number) => `${num(ms / 1000, 1)} s`

const cleanups: Array<() => unknown> = []
async function cleanUp () {
  for (const fn of cleanups.splice(0).reverse()) {
    try {
      await fn()
    } catch (err) {
      log(`cleanup failed: ${String(err)}`)
    }
  }
}
process.once('SIGINT', () => { cleanUp().finally(() => process.exit(130)).catch(() => {}) })

/** A fresh PostgreSQL database for the benchmark (dropped at clean-up), or null for PGlite. */
async function createBenchDatabase (): Promise<{ url: string, label: string } | null> {
  const adminUrl = process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL
  if (!adminUrl) return null
  const name = `sf_bench_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  cleanups.push(async () => {
    if (!args['keep-database']) await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  })
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const [row] = await admin<Array<{ version: string }>>`select current_setting('server_version') as version`
  const kept = args['keep-database'] ? `kept at the end: ${url.href}` : 'dropped at the end'
  return { url: url.href, label: `PostgreSQL ${row?.version ?? '?'}, database ${name} (${kept})` }
}

async function hasPgbench (): Promise<boolean> {
  return await new Promise((resolve) => execFile('pgbench', ['--version'], (err) => resolve(!err)))
}

async function getJson<T> (server: Server, path: string, key: string): Promise<T> {
  const res = await fetch(`${server.baseUrl}${path}`, { headers: { 'x-api-key': key } })
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${await res.text()}`)
  return await res.json() as T
}

/**
 * Waits until the server has worked off what a run left queued (autocannon stops sending,
 * the server keeps answering): /readyz goes through the database pool, so it answers fast
 * only once the queue is empty. Without this a slow run would slow the next one down. On a
 * machine so busy that even an idle /readyz takes 100 ms, `appQueries` (the app's
 * statements running in PostgreSQL) being empty three times in a row counts as settled too.
 */
async function settle (server: Server, appQueries?: () => Promise<string[]>): Promise<number> {
  const started = performance.now()
  let quiet = 0
  let running: string[] = []
  while (performance.now() - started < SETTLE_LIMIT_MS) {
    const t = performance.now()
    const res = await fetch(`${server.baseUrl}/readyz`).catch(() => null)
    await res?.arrayBuffer()
    if (res?.ok && performance.now() - t < 100) return performance.now() - started
    if (appQueries) {
      running = await appQueries().catch(() => ['(unknown)'])
      quiet = running.length === 0 && res?.ok ? quiet + 1 : 0
      if (quiet >= 3) return performance.now() - started
    }
    await sleep(200)
  }
  log(`WARNING: the app did not settle within ${SETTLE_LIMIT_MS / 1000} s (/readyz slow or failing${running.length ? `; running: ${running.slice(0, 3).join(' | ')}` : ''}); the next figures may be slowed down`)
  return performance.now() - started
}

/** Samples a process's RSS every 100 ms; VmHWM, read at the end, also catches what falls between samples. */
function sampleMemory (pid: number) {
  let maxRss = 0
  /** The largest RSS since the last `sinceMark` (which scenario made the peak). */
  let markRss = 0
  const timer = setInterval(() => {
    try {
      const { rss } = memoryOf(pid)
      maxRss = Math.max(maxRss, rss)
      markRss = Math.max(markRss, rss)
    } catch { /* the process is gone */ }
  }, 100)
  return {
    sinceMark: () => {
      let rss = markRss
      try {
        rss = Math.max(rss, memoryOf(pid).rss)
      } catch { /* the process is gone */ }
      markRss = 0
      return rss
    },
    stop: () => {
      clearInterval(timer)
      return Math.max(maxRss, memoryOf(pid).peak)
    }
  }
}

const sleepUntil = async (at: number) => { if (at > performance.now()) await sleep(at - performance.now()) }

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The median of each figure over the runs that measured it. */
function medianFigures (runs: RunFigures[]): { results: Record<string, Figures>, peakRssMb: number } {
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.results)))]
  const results: Record<string, Figures> = {}
  for (const name of names) {
    const all = runs.map((r) => r.results[name]).filter((f): f is Figures => f !== undefined)
    const of = (pick: (f: Figures) => number | undefined) => {
      const values = all.map(pick).filter((v): v is number => v !== undefined && Number.isFinite(v))
      return values.length ? median(values) : undefined
    }
    const figures: Figures = { okPerSecond: of((f) => f.okPerSecond)!, p50: of((f) => f.p50)!, p99: of((f) => f.p99)!, total: of((f) => f.total)!, non2xx: of((f) => f.non2xx)!, errors: of((f) => f.errors)! }
    const optional = {
      appCpuMs: of((f) => f.appCpuMs), dbCpuMs: of((f) => f.dbCpuMs), ratio: of((f) => f.ratio), p99Ratio: of((f) => f.p99Ratio), cacheHitRatio: of((f) => f.cacheHitRatio), appRssMb: of((f) => f.appRssMb)
    }
    for (const [key, value] of Object.entries(optional)) if (value !== undefined) (figures as unknown as Record<string, number>)[key] = value
    const one = { okPerSecond: of((f) => f.oneConnection?.okPerSecond), p50: of((f) => f.oneConnection?.p50), p99: of((f) => f.oneConnection?.p99) }
    if (one.okPerSecond !== undefined) figures.oneConnection = { okPerSecond: one.okPerSecond, p50: one.p50!, p99: one.p99! }
    const ratioKeys = [...new Set(all.flatMap((f) => Object.keys(f.ratios ?? {})))]
    if (ratioKeys.length) figures.ratios = Object.fromEntries(ratioKeys.map((k) => [k, of((f) => f.ratios?.[k])!]))
    const extraKeys = [...new Set(all.flatMap((f) => Object.keys(f.extra ?? {})))]
    if (extraKeys.length) figures.extra = Object.fromEntries(extraKeys.map((k) => [k, of((f) => f.extra?.[k])!]))
    results[name] = figures
  }
  return { results, peakRssMb: median(runs.map((r) => r.peakRssMb)) }
}

interface AimResult { scenario: string, aim: string, value: string, met: boolean }

/** Each aim with the figure it is judged on and whether that figure meets it. */
function judgeAims (results: Record<string, Figures>, peakRssMb: number): AimResult[] {
  const aims: AimResult[] = []
  const ratioAim = (scenario: string, ceiling: string) => {
    const f = results[scenario]
    if (f?.ratio === undefined) return
    aims.push({ scenario, aim: `≥ ${AIMS.ratio} of ${ceiling}`, value: f.ratio.toFixed(2), met: f.ratio >= AIMS.ratio })
  }
  ratioAim('product', 'bare-product')
  const list = results.list
  if (list?.ratio !== undefined && list.p99Ratio !== undefined) {
    aims.push({
      scenario: 'list',
      aim: `≥ ${AIMS.ratio} of bare-list, p99 ≤ ${AIMS.listP99Factor}× bare-list's`,
      value: `${list.ratio.toFixed(2)}, p99 ${list.p99Ratio.toFixed(1)}×`,
      met: list.ratio >= AIMS.ratio && list.p99Ratio <= AIMS.listP99Factor
    })
  }
  for (const scenario of P99_AIMED) {
    const f = results[scenario]
    if (f) aims.push({ scenario, aim: `p99 < ${AIMS.p99Ms} ms at ${AIMS.connections} connections`, value: `${num(f.p99)} ms`, met: f.p99 < AIMS.p99Ms })
  }
  ratioAim('order-create', 'order-create-raw (pgbench)')
  const toCeiling = (scenario: string, ceiling: string, aim: number) => {
    const ratio = results[scenario]?.ratios?.[ceiling]
    if (ratio !== undefined) aims.push({ scenario, aim: `≥ ${aim} of ${ceiling}`, value: ratio.toFixed(2), met: ratio >= aim })
  }
  toCeiling('order-create', 'order-create-min', AIMS.minimalOrderRatio)
  toCeiling('product', 'db-product', AIMS.databaseCeilingRatio)
  toCeiling('list', 'db-list', AIMS.databaseCeilingRatio)
  const raw = results['order-create-raw']
  if (raw?.ratio !== undefined) {
    aims.push({
      scenario: 'order-create-raw',
      aim: `≥ ${AIMS.eventCostRatio} of order-create-raw-nofeed (the change-log write costs ≤ ${num((1 - AIMS.eventCostRatio) * 100)}% of order throughput)`,
      value: raw.ratio.toFixed(2),
      met: raw.ratio >= AIMS.eventCostRatio
    })
  }
  const hooks = results['order-create-webhooks']
  if (hooks?.ratio !== undefined) {
    aims.push({ scenario: 'order-create-webhooks', aim: `≥ ${AIMS.webhookRatio} of order-create (${WEBHOOK_RECEIVERS} endpoints subscribed)`, value: hooks.ratio.toFixed(2), met: hooks.ratio >= AIMS.webhookRatio })
  }
  const hooked = hooks?.extra
  if (hooked?.expected !== undefined) {
    const complete = hooked.undelivered === 0
    aims.push({
      scenario: 'order-create-webhooks',
      aim: `every event to all ${WEBHOOK_RECEIVERS} receivers, event-to-delivery p99 < ${num(AIMS.webhookP99Ms)} ms`,
      value: `${complete ? 'all' : `${num(hooked.undelivered!)} of ${num(hooked.expected)} undelivered after ${num(WEBHOOK_WAIT_LIMIT_MS / 1000)} s`}, ` +
        `p99 ${hooked.latencyP99Ms === undefined ? '-' : num(hooked.latencyP99Ms)} ms${complete ? '' : ' of those delivered'}`,
      met: complete && hooked.latencyP99Ms !== undefined && hooked.latencyP99Ms < AIMS.webhookP99Ms
    })
  }
  if (hooked?.burstDeliveriesPerSecond !== undefined) {
    aims.push({
      scenario: 'order-create-webhooks',
      aim: `the burst: ≥ ${num(AIMS.webhookDeliveriesPerSecond)} deliveries/s, every one delivered`,
      value: `${num(hooked.burstDeliveriesPerSecond)} deliveries/s, ${num(hooked.burstDelivered!)} of ${num(hooked.burstEvents! * WEBHOOK_RECEIVERS)}`,
      met: hooked.burstDeliveriesPerSecond >= AIMS.webhookDeliveriesPerSecond && hooked.burstDelivered === hooked.burstEvents! * WEBHOOK_RECEIVERS
    })
  }
  for (const scenario of ['products-export', 'orders-export']) {
    const f = results[scenario]
    if (f?.extra === undefined) continue
    const complete = f.extra.complete === 1
    aims.push({
      scenario,
      aim: `every record and the closing line${f.ratio === undefined ? '' : `, ≥ ${AIMS.exportRatio} of ${scenario}-floor (its time ÷ the export's)`}`,
      value: `${complete ? 'complete' : 'INCOMPLETE'}${f.ratio === undefined ? '' : `, ${f.ratio.toFixed(2)}`}`,
      met: complete && (f.ratio === undefined || f.ratio >= AIMS.exportRatio)
    })
  }
  const crawl = results['crawl-cursor']?.extra
  if (crawl) {
    const complete = crawl.missing === 0 && crawl.duplicates === 0
    aims.push({
      scenario: 'crawl-cursor',
      aim: `every product once, the whole crawl < ${AIMS.crawlSeconds} s, the last ${CRAWL_ENDS} pages ≤ ${AIMS.crawlLastToFirst}× the first ${CRAWL_ENDS} (median latency)`,
      value: `${complete ? 'complete' : `${num(crawl.missing!)} missing, ${num(crawl.duplicates!)} twice`}, ${num(crawl.seconds!, 1)} s, ${crawl.lastToFirst!.toFixed(2)}×`,
      met: complete && crawl.seconds! < AIMS.crawlSeconds && crawl.lastToFirst! <= AIMS.crawlLastToFirst
    })
  }
  const reader = results['feed-sequential']?.extra
  if (reader) {
    aims.push({
      scenario: 'feed-sequential',
      aim: 'every seeded event the key may see, once, in feed order',
      value: reader.seededMissing === 0 && reader.outOfOrder === 0 ? 'yes' : `${num(reader.seededMissing!)} missing, ${num(reader.outOfOrder!)} out of order`,
      met: reader.seededMissing === 0 && reader.outOfOrder === 0
    })
  }
  aims.push({ scenario: 'server', aim: `peak RSS < ${AIMS.serverMb} MB`, value: `${num(peakRssMb)} MB`, met: peakRssMb < AIMS.serverMb })
  return aims
}

/** A scenario's own figures in words. */
function extraNotes (name: string, f: Figures): string {
  const x = f.extra
  if (!x) return ''
  switch (name) {
    case 'crawl-cursor':
      return `${num(x.pages!)} pages, ${num(x.items!)} products in ${num(x.seconds!, 1)} s; page latency first ${CRAWL_ENDS} ${ms(x.firstMedianMs!)} ms, last ${CRAWL_ENDS} ${ms(x.lastMedianMs!)} ms (medians; means ${ms(x.firstMeanMs!)} / ${ms(x.lastMeanMs!)})`
    case 'feed-sequential':
      return `${num(x.events!)} events in ${num(x.pages!)} pages, ${num(x.seconds!, 1)} s: ${num(x.eventsPerSecond!)} events/s`
    case 'products-export':
    case 'orders-export':
      return `${num(x.records!)} records, ${num(x.bytes! / MB, 1)} MB in ${num(x.seconds!, 2)} s (${num(x.mbPerSecond!, 1)} MB/s), first byte after ${ms(x.firstByteMs!)} ms` +
        `${f.appRssMb === undefined ? '' : `, app RSS at most ${num(f.appRssMb)} MB meanwhile`}`
    case 'products-export-floor':
    case 'orders-export-floor':
      return `${num(x.lines!)} rows, ${num(x.bytes! / MB, 1)} MB in ${num(x.seconds!, 2)} s (${num(x.mbPerSecond!, 1)} MB/s)`
    case 'order-create-raw':
      return x.eventDbCpuMs === undefined ? '' : `the events: ${x.eventDbCpuMs >= 0 ? '+' : ''}${num(x.eventDbCpuMs, 2)} ms of db CPU per order`
    case 'order-create':
      return x.ratioToNoFeed === undefined ? '' : `${x.ratioToNoFeed.toFixed(2)} of order-create-raw-nofeed`
    case 'order-create-webhooks': {
      if (x.expected === undefined) return ''
      const at = (v: number | undefined) => (v === undefined ? '-' : ms(v))
      return `${num(x.delivered!)} of ${num(x.expected)} deliveries (${num(x.events!)} events × ${num(x.receivers!)})${x.undelivered ? `, ${num(x.undelivered)} UNDELIVERED` : ''}, ` +
        `${num(x.duplicates!)} duplicates${x.unexpected ? `, ${num(x.unexpected)} unexpected` : ''}; event to delivery${x.undelivered ? ' (of those delivered)' : ''} ` +
        `min ${at(x.latencyMinMs)} / p50 ${at(x.latencyP50Ms)} / p99 ${at(x.latencyP99Ms)} / max ${at(x.latencyMaxMs)} ms` +
        `${x.publishedP99Ms === undefined ? '' : ` (from publication p50 ${at(x.publishedP50Ms)} / p99 ${at(x.publishedP99Ms)} ms; occurred to published p50 ${at(x.publishLagP50Ms)} / p99 ${at(x.publishLagP99Ms)} ms)`}; ` +
        `${x.deliveriesPerSecond === undefined ? '' : `${num(x.deliveriesPerSecond)} deliveries/s, `}${x.undelivered ? 'gave up' : 'all in'} ${num(x.waitSeconds!, 1)} s after the load` +
        `${x.drainAppCpuMsPerDelivery === undefined ? '' : `, ${DELIVERER} CPU ${num(x.drainAppCpuMsPerDelivery, 2)} ms per delivery then (${num(x.drained!)} deliveries)`}` +
        `${x.burstDeliveriesPerSecond === undefined
? ''
: `; burst of ${num(x.burstEvents!)} events × ${num(x.receivers!)}: ${num(x.burstDelivered!)} delivered in ${num(x.burstSeconds!, 1)} s, ` +
          `${num(x.burstDeliveriesPerSecond)} deliveries/s (${num(x.burstFromFirstPerSecond!)} from the first receipt), ${DELIVERER} CPU ${num(x.burstAppCpuMsPerDelivery!, 2)} ms per delivery`}`
    }
    default:
      return ''
  }
}

function printTable (title: string, scenarios: Scenario[], results: Record<string, Figures>, peakRssMb: number, barePeakRssMb?: number) {
  log()
  log(title)
  const aims = judgeAims(results, peakRssMb)
  const aimOf = (name: string) => aims.find((a) => a.scenario === name)
  const aimsOf = (name: string) => aims.filter((a) => a.scenario === name).map((a) => `${a.aim}: ${a.met ? 'met' : 'MISSED'}`).join('; ')
  const cell = (value: number | undefined, digits: number) => (value === undefined ? '-' : num(value, digits))
  const header = `${'scenario'.padEnd(NAME_WIDTH)} ${'ok/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'cpu ms/req: app + db = all'.padStart(27)}  ${'ratio to ceiling'.padEnd(30)} aim`
  log(header)
  log('-'.repeat(header.length + 30))
  for (const s of scenarios) {
    const f = results[s.name]
    if (!f) continue
    const all = f.appCpuMs === undefined && f.dbCpuMs === undefined ? undefined : (f.appCpuMs ?? 0) + (f.dbCpuMs ?? 0)
    const cpu = `${cell(f.appCpuMs, 2).padStart(6)} + ${cell(f.dbCpuMs, 2).padStart(6)} = ${cell(all, 2).padStart(6)}`
    const further = Object.entries(f.ratios ?? {}).map(([ceiling, r]) => `${r.toFixed(2)} of ${ceiling}`)
    const ratio = [
      ...(f.ratio === undefined ? [] : [`${f.ratio.toFixed(2)} of ${s.baseline}${f.p99Ratio === undefined || s.name !== 'list' ? '' : ` (p99 ${f.p99Ratio.toFixed(1)}×)`}`]),
      ...further
    ].join(', ')
    const notes = [
      aimsOf(s.name),
      extraNotes(s.name, f),
      f.cacheHitRatio !== undefined ? `read-cache hits ${num(f.cacheHitRatio * 100, 1)}%` : s.cacheHits ? 'read-cache hits n/a' : '',
      f.non2xx + f.errors > 0 ? `${num(f.non2xx)} non-2xx, ${num(f.errors)} errors` : ''
    ].filter(Boolean).join('; ')
    log(`${s.name.padEnd(NAME_WIDTH)} ${num(f.okPerSecond).padStart(8)} ${ms(f.p50).padStart(7)} ${ms(f.p99).padStart(7)} ${cpu.padStart(27)}  ${ratio.padEnd(30)} ${notes}`)
  }
  const one = scenarios.filter((s) => results[s.name]?.oneConnection)
  if (one.length) {
    log(`from 1 connection (${ONE_CONNECTION_SECONDS} s right after each load, no queueing): ${one.map((s) => {
      const o = results[s.name]!.oneConnection!
      return `${s.name} ${ms(o.p50)} / ${ms(o.p99)} ms`
    }).join(', ')} (p50 / p99)`)
  }
  const rss = aimOf('server')!
  log(`server peak RSS: ${num(peakRssMb, 1)} MB (${rss.aim}: ${rss.met ? 'met' : 'MISSED'}; the app started with ${appFlags.join(' ') || 'no V8 flags'})${barePeakRssMb === undefined ? '' : `; bare server ${num(barePeakRssMb, 1)} MB`}`)
  const byScenario = scenarios.filter((s) => results[s.name]?.appRssMb !== undefined)
  if (byScenario.length) log(`the app's largest RSS during each scenario (MB): ${byScenario.map((s) => `${s.name} ${num(results[s.name]!.appRssMb!)}`).join(', ')}`)
}

async function main () {
  const below = settings.products < FULL_SIZE.products || settings.orders < FULL_SIZE.orders
  log(`storefront-api benchmark: ${num(settings.products)} products, ${num(settings.orders)} orders, ${num(settings.events)} feed events${below ? ' (the aims are stated for 100,000 and 1,000,000)' : ''}; ` +
    `${settings.runs} run${settings.runs > 1 ? 's' : ''}, each scenario ${settings.durationSeconds} s after ${settings.warmupSeconds} s of warm-up at ${settings.connections} connections`)
  log(`node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}) shared by autocannon, the servers and the database; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)

  let started = performance.now()
  const bench = generateCatalog({ products: settings.products, seed: settings.seed })
  const products = bench.catalog.products!
  const withCombinations = products.filter((p) => p.combinations?.length)
  log(`catalogue: ${num(withCombinations.length)} products with ${num(withCombinations.reduce((n, p) => n + p.combinations!.length, 0))} combinations, generated in ${seconds(performance.now() - started)}`)

  // Which scenarios run: known before the database is filled, so that what none needs is not.
  const selected = selectScenarios(SCENARIOS, args.only)
  const wants = (group: ScenarioGroup) => SCENARIOS.some((s) => s.group === group && selected.has(s.name))

  const pg = await createBenchDatabase()
  if (!pg) {
    if (wants('order-reads')) log('order reads: they need PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL) for the bulk-filled orders table; skipped')
    if (selected.has('order-create-raw')) log('order creation: the comparison with raw SQL needs PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL); only the app side runs, on untracked stock')
    selected.delete('order-create-raw')
    for (const s of SCENARIOS) if (s.group === 'order-reads') selected.delete(s.name)
  }
  const ordersWanted = pg !== null && (wants('order-reads') || selected.has('orders-export')) && settings.orders > 0
  if (pg && (wants('order-reads') || selected.has('orders-export')) && settings.orders === 0) {
    for (const s of SCENARIOS) if (s.group === 'order-reads' || s.name.startsWith('orders-export')) selected.delete(s.name)
    log('order reads and orders-export: --orders 0, skipped')
  }
  if (!pg) {
    if (selected.has('orders-export')) log('orders-export: it needs PostgreSQL for the bulk-filled orders; skipped (products-export runs, without its COPY floor)')
    for (const name of ['order-create-raw-nofeed', 'order-create-min', 'db-product', 'db-list', 'products-export-floor', 'orders-export-floor', 'orders-export']) selected.delete(name)
  }
  if (wants('feed') && settings.events === 0) {
    for (const s of SCENARIOS) if (s.group === 'feed') selected.delete(s.name)
    log('feed: --events 0, skipped')
  }
  const feedWanted = wants('feed')
  if (!pg && args['delivery-instance']) log('--delivery-instance: it needs PostgreSQL (two instances on one database); the app delivers itself')

  let runtime: Runtime = {}
  if (!args.tsx) {
    started = performance.now()
    const compiled = await compileForBench()
    cleanups.push(compiled.remove)
    runtime = { compiledDir: compiled.dir }
    log(`servers: compiled JavaScript (${seconds(performance.now() - started)} to compile), one process each, started anew for each run`)
  } else {
    log('servers: TypeScript through tsx, one process each, started anew for each run (their RSS includes tsx)')
  }

  // The pool order lines come from: with PostgreSQL tracked stock too (raised very large),
  // with PGlite (whose data the app's process holds) untracked stock only.
  const orderLines = chooseOrderLines(bench.catalog, { count: ORDER_LINES, seed: settings.seed, tracked: pg !== null })
  let key = ''
  let benchKeyId = ''
  let lineTable: LineTable | undefined
  let bulk: BulkOrders | undefined
  let seededFeed: SeededFeed | undefined
  const seeding: Record<string, number> = {}
  if (pg) {
    log(`database: ${pg.label}`)
    // No statement timeout: filling and VACUUM may take longer than a request may.
    const database = await openDatabase({ url: pg.url, poolSize: 4, statementTimeoutMs: 0 })
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} })
    const seedingStarted = performance.now()
    try {
      started = performance.now()
      await migrateDatabase(database, pg.url)
      const seeded = await seedStore(database, bench, { analyze: settings.analyze })
      key = seeded.key
      seeding.catalogueMs = performance.now() - started
      log(`seeding: catalogue in ${seconds(seeding.catalogueMs)} (bulk SQL, indexes built after${settings.analyze ? ', then VACUUM ANALYZE' : ''})`)
      benchKeyId = seeded.keyId
      if (feedWanted) {
        seededFeed = await seedFeed(database, { count: settings.events, benchKeyId })
        seeding.feedMs = seededFeed.ms
        log(`seeding: the changes feed, ${num(seededFeed.count)} published events (positions 1…${num(seededFeed.count)}, ${num(seededFeed.visible)} visible to the bench key) in ${seconds(seededFeed.ms)}`)
      }
      if (wants('order-create') || ordersWanted) {
        await raiseStock(sql, orderLines)
        lineTable = await createLineTable(sql, orderLines)
      }
      if (ordersWanted) {
        const others: string[] = []
        for (let i = 1; i <= OTHER_KEYS; i++) others.push((await createApiKey(database.db, { name: `bench-other-${i}`, scopes: ['orders:list', 'orders:find'] })).id)
        const fillStarted = performance.now()
        bulk = await bulkInsertOrders(sql, {
          count: settings.orders,
          chunk: BULK_CHUNK,
          benchKeyId,
          otherKeyIds: others,
          lines: lineTable!.lines,
          onChunk: (done) => {
            if (done % 500_000 === 0 && done < settings.orders) log(`  … ${num(done)} orders in ${seconds(performance.now() - fillStarted)}`)
          }
        })
        seeding.ordersMs = bulk.ms
        const [sizes] = await sql<Array<{ orders: string, items: string, total: string }>>`
          select pg_size_pretty(pg_total_relation_size('orders')) as orders, pg_size_pretty(pg_total_relation_size('order_items')) as items,
            (select count(*) from order_items)::text as total`
        log(`seeding: ${num(bulk.count)} orders with ${num(Number(sizes!.total))} items (${num(bulk.benchCount)} for the bench key, the rest over ${OTHER_KEYS} other keys) in ${seconds(bulk.ms)}, ` +
          `chunks of ${num(BULK_CHUNK)}, indexes built after, then VACUUM ANALYZE; orders ${sizes!.orders}, order_items ${sizes!.items} with their indexes`)
      }
      // The catalogue's VACUUM ran right after its fill, often beside autovacuum's ANALYZE of
      // the fresh tables, whose snapshot kept it from marking pages all-visible. Once more,
      // quiet: the visibility map autovacuum reaches a while after an import.
      if (settings.analyze) await sql.unsafe('vacuum products, product_categories')
      seeding.totalMs = performance.now() - seedingStarted
      log(`seeding: ${seconds(seeding.totalMs)} in all (migrations, catalogue, key, feed events, order lines and their stock, orders)`)
    } finally {
      await sql.end({ timeout: 5 })
      await database.close()
    }
  } else {
    log(`database: PGlite in memory, in the app's process, filled anew for each run${settings.products > QUICK_SIZE.products ? ' (some 2 minutes and 1 GB at 100,000 products: --quick for a fast look, PostgreSQL for the order reads)' : ''}`)
  }

  const monitor = pg ? postgres(pg.url, { max: 1, onnotice: () => {}, connection: { application_name: 'storefront-bench-monitor' } }) : undefined
  if (monitor) cleanups.push(() => monitor.end({ timeout: 5 }))
  const localDatabase = pg !== null && ['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(new URL(pg.url).hostname)

  // What the scenarios draw from, the same in every run.
  const filters = listFilters(bench)
  const names = products.map((p) => p.name)
  const terms = bulk ? orderReadTerms(bulk, settings.seed) : undefined
  const orderBody = orderBodies(orderLines, settings.seed)

  // The database ceilings need the bench's PostgreSQL and its monitor connection to fill their table.
  const databaseCeilings = pg !== null && (selected.has('db-product') || selected.has('db-list'))
  const runs: RunFigures[] = []
  let scenarios: Scenario[] = []
  // A server without autovacuum (CI machines turn it off) leaves the previous run's writes
  // (stock, documents, orders, deliveries) unvacuumed: deep index-only scans then read the
  // heap for every row (the isAvailable list at offset 50,000: 39,495 heap fetches and
  // 29 ms, against none and 9 ms once vacuumed). A deployment's autovacuum catches up after
  // such a load; the bench does what it would before each later run.
  const vacuumBetweenRuns = monitor !== undefined && settings.analyze &&
    (await monitor<Array<{ autovacuum: string }>>`select current_setting('autovacuum') as autovacuum`)[0]!.autovacuum === 'off'
  for (let run = 1; run <= settings.runs; run++) {
    const loadBefore = loadavg()
    log()
    log(`run ${run} of ${settings.runs}`)
    if (run > 1 && vacuumBetweenRuns) {
      started = performance.now()
      await monitor!.unsafe('vacuum analyze')
      log(`  VACUUM ANALYZE of the database in ${seconds(performance.now() - started)} (the server's autovacuum is off; a deployment's would have run after the last run's writes)`)
    }
    started = performance.now()
    const app = await startAppServer({ ...runtime, profileDir: args.profile }, pg
      ? { databaseUrl: pg.url, key, ...(settings.pool ? { poolSize: settings.pool } : {}), ...(args['delivery-instance'] ? { config: { WEBHOOK_DELIVERY: 'false' } } : {}) }
      : { seed: { products: settings.products, seed: settings.seed, analyze: settings.analyze, events: feedWanted ? settings.events : 0 } },
    (seeded) => {
      log(`  PGlite filled in ${seconds(seeded.importMs)} in the app's process${seeded.feed ? `, then ${num(seeded.feed.count)} feed events in ${seconds(seeded.feed.ms)}` : ''}`)
      if (seeded.feed) seededFeed = seeded.feed
    })
    const stopApp = app.server.stop
    cleanups.push(stopApp)
    key = app.key
    const appPid = app.server.child.pid!
    log(`  app: ready ${seconds(performance.now() - started)} after start${pg ? `, PostgreSQL pool: ${settings.pool ?? 'the app\'s default'}` : ''}, RSS ${num(memoryOf(appPid).rss / MB, 1)} MB idle (its peak is measured from here)`)
    const memory = sampleMemory(appPid)
    // --delivery-instance: the app serves the API only, and a second one, which no request
    // reaches, delivers the webhooks (as an operator deploys them under a heavy order load).
    let delivery: { server: Server, memory: ReturnType<typeof sampleMemory> } | undefined
    if (args['delivery-instance'] && pg) {
      const server = (await startAppServer({ ...runtime, profileDir: args.profile }, { databaseUrl: pg.url, key })).server
      cleanups.push(server.stop)
      const pid = server.child.pid!
      log(`  delivery instance: ready, RSS ${num(memoryOf(pid).rss / MB, 1)} MB idle; the app does not deliver (WEBHOOK_DELIVERY=false)`)
      delivery = { server, memory: sampleMemory(pid) }
    }

    // The bare server answers what the app answers: fetched from the app before any load.
    const random = randomGenerator(settings.seed * 1000 + run)
    const bareIds = Array.from({ length: Math.min(BARE_PRODUCTS, bench.productIds.length) }, () => bench.productIds[Math.floor(random() * bench.productIds.length)]!)
    const bareProducts: Product[] = []
    let bare: Server | undefined
    const appHeaders = { 'x-api-key': app.key }
    if (run === 1 && seededFeed) await checkFeed(app, seededFeed)
    if (wants('catalogue') || wants('order-reads')) {
      for (const id of new Set(bareIds)) bareProducts.push(await getJson<Product>(app.server, `/external/v1/products/${id}`, app.key))
      const firstPage = await getJson<ProductPage>(app.server, '/external/v1/products', app.key)
      const ordersPage = bulk ? await getJson<OrderPage>(app.server, '/external/v1/orders', app.key) : undefined
      if (run === 1) await checkAgainstApp({ app, bench, filters, firstPage, ordersPage, bulk, terms, benchKeyId, monitor })
      if (run === 1 && databaseCeilings && monitor) {
        // The app's own answers, byte for byte, as the database ceilings serve them.
        const filled = await fillRendered(monitor, { baseUrl: app.server.baseUrl, key: app.key, pages: Math.max(1, Math.ceil(settings.products / PAGE_SIZE)) })
        log(`  db ceilings: ${num(filled.products)} products' and ${num(filled.pages)} pages' JSON from the app into PostgreSQL in ${seconds(filled.ms)}`)
      }
      bare = await startBareServer(runtime, { products: bareProducts, page: firstPage, ...(ordersPage ? { ordersPage } : {}), ...(databaseCeilings ? { databaseUrl: pg!.url } : {}) })
      cleanups.push(bare.stop)
    }

    const catalogue: Scenario[] = catalogueScenarios({
      random,
      productIds: bench.productIds,
      bareIds: bareProducts.map((p) => p.id),
      products: settings.products,
      filters,
      searchTerm: namePieces(names, settings.seed + run),
      searchExamples: Array.from({ length: 4 }, namePieces(names, settings.seed)),
      ...(databaseCeilings ? { database: { label: 'one row a product, one a page' } } : {})
    })
    catalogue.push(crawlScenario(settings.products, () => crawlByCursor({ baseUrl: app.server.baseUrl, headers: appHeaders, expected: bench.productIds.length })))
    const feedReads: Scenario[] = []
    if (seededFeed && feedWanted) {
      const { count, visible } = seededFeed
      feedReads.push(...feedScenarios({
        random,
        events: count,
        visible,
        sequentialLimit: FEED_READER_LIMIT,
        readFromStart: () => readFeedFromStart({ baseUrl: app.server.baseUrl, headers: appHeaders, limit: FEED_READER_LIMIT, seededCount: count, seededVisible: visible })
      }))
    }
    let orderReads: Scenario[] = []
    if (bulk && terms) {
      const ordersLastPage = Math.ceil(bulk.benchCount / PAGE_SIZE)
      const examples = orderReadTerms(bulk, settings.seed)
      orderReads = orderReadScenarios({
        orders: bulk.benchCount,
        lastPage: ordersLastPage,
        deepPage: Math.min(DEEP_PAGE, ordersLastPage),
        numberPrefix: terms.numberPrefix,
        nameFragment: terms.nameFragment,
        examples: { numberPrefixes: Array.from({ length: 3 }, examples.numberPrefix), nameFragments: Array.from({ length: 3 }, examples.nameFragment) }
      })
    }
    let orderCreate: Scenario[] = []
    if (wants('order-create')) {
      // One order first: the pool's lines must be orderable.
      const res = await fetch(`${app.server.baseUrl}/external/v1/orders`, { method: 'POST', headers: { 'x-api-key': app.key, 'content-type': 'application/json' }, body: orderBody() })
      if (res.status !== 201) throw new Error(`POST /external/v1/orders answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
      let raw: { tool: string, run: (durationSeconds: number, feed: boolean) => Promise<LoadResult>, runPair: (durationSeconds: number) => Promise<[LoadResult, LoadResult]> } | undefined
      let minimal: ((durationSeconds: number) => Promise<LoadResult>) | undefined
      if (pg && lineTable && selected.has('order-create-min') && lineTable.trackedProducts >= 2 && (args.raw !== 'node' && await hasPgbench())) {
        const script = pgbenchMinimalScript(lineTable, benchKeyId)
        minimal = async (durationSeconds) => {
          const result = await runPgbench({ url: pg.url, script, connections: settings.connections, durationSeconds })
          // Its orders skip the key's count (more than an order must do): counted now, as the
          // app counts its own, so the order reads and the orders export see a true total.
          await recountOrders(monitor!, benchKeyId)
          return result
        }
      }
      if (pg && lineTable && selected.has('order-create-raw')) {
        const table = lineTable
        const usePgbench = args.raw === 'pgbench' || (args.raw === 'auto' && await hasPgbench())
        if (args.raw === 'auto' && !usePgbench && run === 1) log('order creation: pgbench not found, the raw side runs with postgres.js')
        const connections = settings.connections
        raw = usePgbench
          ? {
              tool: 'pgbench',
              run: (durationSeconds, feed) => runPgbench({ url: pg.url, script: pgbenchScript(table, benchKeyId, { feed }), connections, durationSeconds }),
              runPair: (durationSeconds) => runPgbenchPair({ url: pg.url, script: pgbenchScript(table, benchKeyId, { feed: 'alternate' }), connections, durationSeconds })
            }
          : {
              tool: 'postgres.js',
              run: (durationSeconds, feed) => runRawNode({ url: pg.url, lines: orderLines, apiKeyId: benchKeyId, connections, durationSeconds, seed: settings.seed + run, feed }),
              runPair: (durationSeconds) => runRawNodePair({ url: pg.url, lines: orderLines, apiKeyId: benchKeyId, connections, durationSeconds, seed: settings.seed + run })
            }
      }
      const webhooks = selected.has('order-create-webhooks')
        ? {
            receivers: WEBHOOK_RECEIVERS,
            setUp: () => setUpWebhooks({
              runtime,
              baseUrl: app.server.baseUrl,
              key: app.key,
              deliveringPid: delivery?.server.child.pid ?? appPid,
              ...(pg ? { keyId: benchKeyId } : {}),
              monitor,
              receivers: WEBHOOK_RECEIVERS,
              waitLimitMs: WEBHOOK_WAIT_LIMIT_MS,
              onCleanup: (fn) => { cleanups.push(fn) }
            })
          }
        : undefined
      orderCreate = orderCreateScenarios({ body: orderBody, lines: orderLines.length, trackedLines: orderLines.filter((l) => l.tracked).length, ...(raw ? { raw } : {}), ...(minimal ? { minimal } : {}), ...(webhooks ? { webhooks } : {}) })
    }
    const exports = exportScenarios({
      products: settings.products,
      readProducts: () => readWholeExport({ baseUrl: app.server.baseUrl, path: '/external/v1/products/export', headers: appHeaders, expected: bench.productIds.length }),
      ...(pg ? { copyProducts: () => copyToClient(pg.url, PRODUCT_DOCUMENTS_COPY) } : {}),
      ...(pg && bulk
        ? {
            orders: {
              count: bulk.benchCount,
              // Orders placed by order-create meanwhile count too: the export's closing line is checked against the key's list.
              read: async () => readWholeExport({ baseUrl: app.server.baseUrl, path: '/external/v1/orders/export', headers: appHeaders, expected: (await getJson<OrderPage>(app.server, '/external/v1/orders', app.key)).total }),
              copy: () => copyToClient(pg.url, orderDocumentsCopy(benchKeyId))
            }
          }
        : {})
    })
    scenarios = [...catalogue, ...orderReads, ...feedReads, ...exports, ...orderCreate].filter((s) => selected.has(s.name))
    if (run === 1) for (const s of scenarios) log(`  ${s.name.padEnd(NAME_WIDTH)} ${s.description}`)

    const results = await runScenarios({ scenarios, app: app.server, key: app.key, bare, monitor, localDatabase, run, appRss: memory.sinceMark, ...(delivery ? { deliveryPid: delivery.server.child.pid! } : {}) })
    const peakRssMb = memory.stop() / MB
    if (delivery) {
      log(`  delivery instance: peak RSS ${num(delivery.memory.stop() / MB, 1)} MB`)
      await delivery.server.stop()
    }
    const barePeakRssMb = bare ? memoryOf(bare.child.pid!).peak / MB : undefined
    await bare?.stop()
    await stopApp()
    runs.push({ run, results, peakRssMb, ...(barePeakRssMb === undefined ? {} : { barePeakRssMb }), loadAverage: { before: loadBefore, after: loadavg() } })
    if (settings.runs > 1) printTable(`run ${run}: (load average ${loadavg().map((l) => l.toFixed(1)).join(' ')})`, scenarios, results, peakRssMb, barePeakRssMb)
  }

  const medians = medianFigures(runs)
  printTable(settings.runs > 1 ? `medians of ${settings.runs} runs (each ratio is taken within its run, then the median of those)` : 'figures', scenarios, medians.results, medians.peakRssMb,
    settings.runs > 1 ? undefined : runs[0]?.barePeakRssMb)
  log()
  log('ok/s: 2xx answers a second (committed transactions for order-create-raw); ratio: ok/s ÷ the ceiling\'s, measured in the same run')
  log(`cpu ms/req: CPU time per 2xx answer of the server's own process (app)${pg ? ' and of the PostgreSQL backends serving the bench database (db: a local server only, sampled every 200 ms, a lower bound)' : ' (PGlite\'s work is in it)'}; autocannon and pgbench are not counted`)
  if (pg) log('read-cache hits: 1 − (product reads PostgreSQL made ÷ requests), product reads counted by the index scans of product_documents_pkey (pg_stat_user_indexes), read once the backends have published them; the app exposes no cache counter')
  else log('read-cache hits: n/a without PostgreSQL (counted from its statistics; the app exposes no cache counter)')
  const aims = judgeAims(medians.results, medians.peakRssMb)
  log()
  log(`aims${settings.runs > 1 ? ' (on the medians)' : ''}:${below ? ' stated for 100,000 products and 1,000,000 orders, this run is smaller' : ''}${settings.connections !== AIMS.connections ? `; p99 aims are for ${AIMS.connections} connections, this run used ${settings.connections}` : ''}`)
  for (const a of aims) log(`  ${a.met ? 'met   ' : 'MISSED'}  ${a.scenario.padEnd(NAME_WIDTH)} ${a.aim}: ${a.value}`)
  const busy = loadavg()[0]! > cpus().length
  log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}${busy ? ` — above ${cpus().length} CPUs: other work shared them, read the ratios rather than the rates` : ''}`)
  const failed = runs.reduce((n, r) => n + Object.values(r.results).reduce((m, f) => m + f.non2xx + f.errors, 0), 0)
  if (failed > 0) log(`WARNING: ${num(failed)} requests failed (non-2xx or connection errors): the rates above are not comparable`)

  if (args.json) {
    writeFileSync(args.json, `${JSON.stringify({
      settings,
      database: pg ? 'postgres' : 'pglite',
      runtime: args.tsx ? 'tsx' : 'compiled',
      seeding,
      orders: bulk,
      scenarios: scenarios.map((s) => ({ name: s.name, description: s.description, ceiling: s.baseline })),
      feed: seededFeed,
      runs,
      medians,
      aims
    }, null, 2)}\n`)
    log(`figures written to ${args.json}`)
  }
  if (args.profile) {
    mkdirSync(args.profile, { recursive: true })
    writeFileSync(`${args.profile}/scenario-windows.json`, `${JSON.stringify(profileWindows, null, 2)}\n`)
    log(`CPU profiles of the app in ${args.profile}, with scenario-windows.json: \`npx tsx bench/profile-summary.ts ${args.profile}\` sums their self time by scenario`)
  }
}

/** The filters list-filtered draws from, with the products each matches (checked against the app). */
function listFilters (bench: BenchCatalog): { category: ListFilter[], brand: ListFilter[], available: ListFilter[] } {
  const products = bench.catalog.products ?? []
  const count = (test: (p: (typeof products)[number]) => boolean) => products.reduce((n, p) => n + (test(p) ? 1 : 0), 0)
  return {
    category: (bench.catalog.categories ?? []).map((c) => ({ label: c.name, query: `categoryIds=${c.id}`, total: count((p) => p.categoryIds?.includes(c.id) ?? false) })),
    brand: (bench.catalog.brands ?? []).map((b) => ({ label: b.name, query: `brandIds=${b.id}`, total: count((p) => p.brandId === b.id) })),
    available: [{ label: 'available', query: 'isAvailable=true', total: count(orderable) }]
  }
}

/** Before the first run: the app must see what the fill wrote (totals, filters, searches, order matches). */
async function checkAgainstApp (input: {
  app: { server: Server, key: string }
  bench: BenchCatalog
  filters: ReturnType<typeof listFilters>
  firstPage: ProductPage
  ordersPage: OrderPage | undefined
  bulk: BulkOrders | undefined
  terms: ReturnType<typeof orderReadTerms> | undefined
  benchKeyId: string
  monitor: postgres.Sql | undefined
}) {
  const { app, bench, filters, firstPage } = input
  const total = async (path: string) => (await getJson<{ total: number }>(app.server, path, app.key)).total
  if (firstPage.total !== bench.productIds.length) throw new Error(`the app lists ${firstPage.total} products, expected ${bench.productIds.length}`)
  // Unfiltered pages by number are ranges of the list positions the fill numbered: the last
  // page holds what is left, and page 2 by number is page 2 by cursor (the keyset order).
  const lastPage = Math.max(1, Math.ceil(firstPage.total / PAGE_SIZE))
  const last = await getJson<ProductPage>(app.server, `/external/v1/products?page=${lastPage}`, app.key)
  const leftOver = firstPage.total - (lastPage - 1) * PAGE_SIZE
  if (last.items.length !== leftOver) throw new Error(`products?page=${lastPage} lists ${last.items.length} products, expected ${leftOver} (are the list positions filled?)`)
  if (firstPage.nextCursor) {
    const byNumber = await getJson<ProductPage>(app.server, '/external/v1/products?page=2', app.key)
    const byCursor = await getJson<ProductPage>(app.server, `/external/v1/products?cursor=${encodeURIComponent(firstPage.nextCursor)}`, app.key)
    const ids = (page: ProductPage) => page.items.map((p) => p.id).join()
    if (ids(byNumber) !== ids(byCursor)) throw new Error('products?page=2 and page 1\'s nextCursor list different products: the list positions do not follow the list order')
  }
  for (const filter of [...filters.category, ...filters.brand, ...filters.available]) {
    const found = await total(`/external/v1/products?${filter.query}`)
    if (found !== filter.total) throw new Error(`products?${filter.query} (${filter.label}) lists ${found} products, expected ${filter.total}`)
  }
  const pieces = Array.from({ length: CHECKED_TERMS }, namePieces(bench.catalog.products!.map((p) => p.name), 7))
  const expected = countMatches(bench.catalog, pieces)
  for (const [i, term] of pieces.entries()) {
    const found = await total(`/external/v1/products?query=${encodeURIComponent(term)}`)
    if (found !== expected[i]) throw new Error(`products?query=${term} finds ${found} products, expected ${expected[i]}`)
  }
  let checked = `the list positions (the last page, page 2 by number and by cursor), ${filters.category.length + filters.brand.length + filters.available.length} filters' and ${CHECKED_TERMS} searches' totals`
  if (input.bulk && input.terms && input.ordersPage && input.monitor) {
    // One order was created already when order creation runs: at least the bulk orders.
    if (input.ordersPage.total < input.bulk.benchCount) throw new Error(`the app lists ${input.ordersPage.total} orders for the key, expected ${input.bulk.benchCount}`)
    const queries = [...Array.from({ length: CHECKED_TERMS }, input.terms.numberPrefix), ...Array.from({ length: CHECKED_TERMS }, input.terms.nameFragment)]
    for (const term of queries) {
      const found = await total(`/external/v1/orders?query=${encodeURIComponent(term)}`)
      const want = await countOrderMatches(input.monitor, input.benchKeyId, term)
      if (found !== want) throw new Error(`orders?query=${term} finds ${found} orders, expected ${want}`)
    }
    checked += ` and ${queries.length} order searches'`
  }
  log(`  checked against the app: ${checked}`)
}

/** Before the first run: the feed's head is the last seeded event (nothing else has happened yet). */
async function checkFeed (app: { server: Server, key: string }, feed: SeededFeed) {
  const head = await getJson<{ nextCursor: string, items: unknown[] }>(app.server, '/external/v1/changes?limit=0', app.key)
  if (head.nextCursor !== `evt_${feed.count}`) throw new Error(`changes?limit=0 answers the head ${head.nextCursor}, expected evt_${feed.count}`)
  const first = await getJson<{ items: Array<{ id: string }> }>(app.server, '/external/v1/changes?limit=5', app.key)
  if (first.items[0]?.id !== 'evt_1') throw new Error(`changes from the start begins at ${first.items[0]?.id ?? 'nothing'}, expected evt_1`)
  log(`  checked against the app: the feed's head (evt_${num(feed.count)}) and its start`)
}

/** Runs each scenario (warm-up, load, settle) and returns its figures. */
async function runScenarios (input: {
  scenarios: Scenario[]
  app: Server
  key: string
  bare: Server | undefined
  monitor: postgres.Sql | undefined
  localDatabase: boolean
  run: number
  /** The app's largest RSS in bytes since the last call. */
  appRss: () => number
  /** With --delivery-instance: its profile's windows are named `<scenario>@delivery`. */
  deliveryPid?: number
}): Promise<Record<string, Figures>> {
  const { scenarios, app, key, bare, monitor } = input
  const results: Record<string, Figures> = {}
  const appQueries = monitor
    ? async () => (await monitor<Array<{ query: string }>>`select left(query, 120) as query from pg_stat_activity
        where datname = current_database() and state <> 'idle' and application_name like 'storefront-api/%' and pid <> pg_backend_pid()`).map((r) => r.query)
    : undefined
  const backends = async () => (await monitor!<Array<{ pid: number }>>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`).map((r) => r.pid)
  // Product reads PostgreSQL made: one index scan of product_documents_pkey each (db/products.ts readDocuments).
  const productReads = async () => Number((await monitor!<Array<{ n: string }>>`select coalesce(sum(idx_scan), 0)::text as n from pg_stat_user_indexes where indexrelname = 'product_documents_pkey'`)[0]!.n)
  /** When the app (or raw SQL) last worked on the database: its statistics are published STATS_FLUSH_MS later. */
  let lastDatabaseWork = performance.now()
  let pendingHits: { name: string, before: number, requests: number } | undefined
  const countHits = async () => {
    if (!pendingHits) return
    await sleepUntil(lastDatabaseWork + STATS_FLUSH_MS)
    const misses = (await productReads()) - pendingHits.before
    results[pendingHits.name]!.cacheHitRatio = Math.min(1, Math.max(0, 1 - misses / Math.max(pendingHits.requests, 1)))
    pendingHits = undefined
  }

  /** Ratios to the ceiling and the scenario's own derived figures, then its line of progress. */
  const finish = (scenario: Scenario, figures: Figures, waited: number) => {
    const ceiling = scenario.baseline === undefined ? undefined : results[scenario.baseline]
    if (ceiling) {
      figures.ratio = figures.okPerSecond / ceiling.okPerSecond
      figures.p99Ratio = figures.p99 / ceiling.p99
    }
    for (const name of scenario.ceilings ?? []) {
      const other = results[name]
      if (other) figures.ratios = { ...figures.ratios, [name]: figures.okPerSecond / other.okPerSecond }
    }
    // What the change-log write costs: the app's orders against the transaction without it,
    // and the database CPU the INSERT (and its publication) adds per order.
    const noFeed = results['order-create-raw-nofeed']
    if (scenario.name === 'order-create' && noFeed) figures.extra = { ...figures.extra, ratioToNoFeed: figures.okPerSecond / noFeed.okPerSecond }
    if (scenario.name === 'order-create-raw' && noFeed?.dbCpuMs !== undefined && figures.dbCpuMs !== undefined) figures.extra = { ...figures.extra, eventDbCpuMs: figures.dbCpuMs - noFeed.dbCpuMs }
    const notes = extraNotes(scenario.name, figures)
    log(`  ${scenario.name.padEnd(NAME_WIDTH)} ${num(figures.okPerSecond).padStart(7)} ok/s, p99 ${num(figures.p99)} ms${notes ? `; ${notes}` : ''}${waited > 1000 ? ` [${seconds(waited)} to work off its queue afterwards]` : ''}`)
  }

  /**
   * Two raw scenarios measured together by the first one's `runPair`: the same clients
   * alternate between them in slices of a second (A B B A …), so on a machine whose load
   * moves from second to second both see the same conditions and their ratio holds where
   * two runs one after the other would not. The database's CPU is split by the slice it was
   * spent in.
   */
  const runAlternating = async (first: Scenario, second: Scenario): Promise<[Figures, Figures]> => {
    if (settings.warmupSeconds > 0) await first.runPair!(settings.warmupSeconds)
    // Which scenario a moment belongs to: the one whose slice it is (the pair's own rule, bench/orders.ts feedPhase).
    const phaseOf = () => (feedPhase(Date.now()) ? second.name : first.name)
    const dbCpu = monitor && input.localDatabase ? backendCpuByPhase(backends, phaseOf) : undefined
    await dbCpu?.start()
    const pair = await first.runPair!(settings.durationSeconds)
    const cpu = await dbCpu?.stop()
    lastDatabaseWork = performance.now()
    const rss = input.appRss() / MB
    const figures = pair.map((result, i): Figures => {
      const f: Figures = { okPerSecond: result.okPerSecond, p50: result.p50, p99: result.p99, total: result.total, non2xx: result.non2xx, errors: result.errors, appRssMb: rss }
      if (cpu) f.dbCpuMs = (cpu.get(i === 0 ? first.name : second.name) ?? 0) / Math.max(result.total, 1)
      return f
    })
    return [figures[0]!, figures[1]!]
  }

  const done = new Set<string>()
  for (const scenario of scenarios) {
    if (done.has(scenario.name)) continue
    const partner = scenario.alternatesWith === undefined ? undefined : scenarios.find((s) => s.name === scenario.alternatesWith)
    if (partner && scenario.runPair) {
      await countHits()
      input.appRss()
      const [mine, theirs] = await runAlternating(scenario, partner)
      results[scenario.name] = mine
      finish(scenario, mine, 0)
      results[partner.name] = theirs
      finish(partner, theirs, 0)
      done.add(partner.name)
      continue
    }
    const server = scenario.server === 'app' ? app : scenario.server === 'bare' || scenario.server === 'db' ? bare : undefined
    const headers: Record<string, string> = scenario.server === 'app' ? { 'x-api-key': key } : {}
    const load = async (durationSeconds: number, connections = settings.connections): Promise<LoadResult> => {
      if (scenario.run) return await scenario.run(durationSeconds)
      if (!server || !scenario.next) throw new Error(`scenario ${scenario.name} has no server or requests`)
      return await runLoad({ baseUrl: server.baseUrl, next: scenario.next, ...(scenario.sequence ? { sequence: scenario.sequence } : {}), headers, durationSeconds, connections })
    }
    const touchesDatabase = scenario.server !== 'bare'
    // The counters of the scenario before must be read before this one adds to them.
    if (touchesDatabase) await countHits()
    input.appRss()
    const tearDown = await scenario.setUp?.()
    if (settings.warmupSeconds > 0 && !scenario.fixed) {
      await load(settings.warmupSeconds)
      if (scenario.server === 'app') await settle(app, appQueries)
      if (touchesDatabase) lastDatabaseWork = performance.now()
    }
    const hits = scenario.cacheHits && monitor !== undefined
    let readsBefore = 0
    if (hits) {
      await sleepUntil(lastDatabaseWork + STATS_FLUSH_MS)
      readsBefore = await productReads()
    }
    const cpuBefore = server ? cpuTimeOf(server.child.pid!) : 0
    const dbCpu = monitor && input.localDatabase && touchesDatabase ? backendCpu(backends) : undefined
    await dbCpu?.start()
    const startUs = monotonicUs()
    const result = await load(settings.durationSeconds)
    if (args.profile && scenario.server === 'app') {
      const endUs = monotonicUs()
      profileWindows.push({ run: input.run, appPid: app.child.pid!, scenario: scenario.name, startUs, endUs })
      if (input.deliveryPid !== undefined) profileWindows.push({ run: input.run, appPid: input.deliveryPid, scenario: `${scenario.name}@delivery`, startUs, endUs })
    }
    // Answers that were 2xx (a fixed scenario's are counted, a timed one's are its rate × its duration).
    const ok = Math.max(scenario.fixed ? result.total - result.non2xx : result.okPerSecond * settings.durationSeconds, 1)
    const figures: Figures = { okPerSecond: result.okPerSecond, p50: result.p50, p99: result.p99, total: result.total, non2xx: result.non2xx, errors: result.errors }
    if (result.extra) figures.extra = { ...result.extra }
    if (scenario.server !== 'bare') figures.appRssMb = input.appRss() / MB
    if (server) figures.appCpuMs = (cpuTimeOf(server.child.pid!) - cpuBefore) / ok
    if (dbCpu) figures.dbCpuMs = (await dbCpu.stop()) / ok
    results[scenario.name] = figures
    const waited = scenario.server === 'app' ? await settle(app, appQueries) : 0
    if (tearDown) figures.extra = { ...figures.extra, ...(await tearDown()) }
    if (scenario.oneConnection && server && scenario.next) {
      // The same requests one at a time: a request's own latency, without the queueing of the run above.
      const one = await runLoad({ baseUrl: server.baseUrl, next: scenario.next, headers, durationSeconds: ONE_CONNECTION_SECONDS, connections: 1 })
      figures.oneConnection = { okPerSecond: one.okPerSecond, p50: one.p50, p99: one.p99 }
    }
    if (touchesDatabase) lastDatabaseWork = performance.now()
    // Requests sent: those still in flight when autocannon stops are read from the database too.
    if (hits) pendingHits = { name: scenario.name, before: readsBefore, requests: result.sent ?? result.total }
    finish(scenario, figures, waited)
  }
  await countHits()
  return results
}

try {
  await main()
} finally {
  await cleanUp()
}
