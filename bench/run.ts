// `npm run bench [-- --products 100000 --orders 1000000 --duration 10 --connections 32 --warmup 2 --only orders]`
//
// Loads the real app and, in the same run, a baseline, so the figures are read as ratios
// (autocannon shares the machine's cores with the servers): for the catalogue a bare
// Fastify server that answers the same JSON from memory; for order creation the same
// transaction in raw SQL against the same database (pgbench, or postgres.js without it).
// Each server runs alone in a child process, compiled as in production; the app's peak
// RSS (VmHWM of its process) is the server's memory. autocannon runs here.
//
// Database: a fresh PostgreSQL database `sf_bench_<random>` when BENCH_DATABASE_URL (or
// DATABASE_URL) is set, dropped at the end; otherwise an in-memory PGlite, which then lives
// in the app's process (and counts in its memory). The order reads need PostgreSQL (the
// orders table is bulk-filled with SQL), and so does the raw-SQL side of order creation.
//
// Scenarios, in the order they run (`--only` takes names and groups, comma-separated;
// a scenario's baseline runs with it):
//   catalogue:    product, product-hot, bare-product, list, list-crawl, bare-list, search, search-1-conn
//   order-reads:  orders-page-1, orders-page-2, orders-deep, orders-number, orders-name, order-by-number
//   order-create: order-create, order-create-raw
//   orders:       order-reads and order-create
//
// Other options: --orders N (orders bulk-inserted for the order reads, default 100,000;
// 1,000,000 for the aim, ~2 minutes of inserting; 0 skips the reads), --raw
// auto|pgbench|node (the raw-SQL driver), --pool N (the app's PostgreSQL pool size
// instead of its default of 10, to see what the pool bounds), --profile DIR (a V8 CPU profile of the app's
// process, written when it stops), --tsx (run the servers through tsx, no
// compile step; their RSS then includes tsx), --keep-database (do not drop the PostgreSQL
// database, to look into it afterwards; drop it yourself), --skip-analyze (leave the planner statistics
// as the import left them), --seed N, --json FILE (the figures, machine-readable).
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { createApiKey } from '../db/api-keys.ts'
import { migrateDatabase, openDatabase } from '../db/client.ts'
import { PAGE_SIZE } from '../schemas/common.ts'
import type { Order, OrderSummary } from '../schemas/orders.ts'
import type { Product, ProductPage } from '../schemas/products.ts'
import { compileForBench } from './build.ts'
import { generateCatalog, randomGenerator } from './catalog.ts'
import { runLoad, type LoadResult } from './load.ts'
import {
  bulkInsertOrders, chooseOrderLines, createLineTable, orderBodies, orderReadTerms, pgbenchScript, raiseStock, runPgbench, runRawNode,
  type BulkOrders, type LineTable
} from './orders.ts'
import { backendCpu, cpuTimeOf, memoryOf, startAppServer, startBareServer, type Runtime, type Server } from './processes.ts'
import {
  ORDER_SCENARIOS, catalogueScenarios, orderCreateScenarios, orderReadScenarios, selectScenarios, type Scenario, type ScenarioGroup
} from './scenarios.ts'
import { seedStore } from './seed.ts'

const { values: args } = parseArgs({
  options: {
    products: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    orders: { type: 'string', default: '100000' },
    raw: { type: 'string', default: 'auto' },
    pool: { type: 'string' },
    only: { type: 'string' },
    json: { type: 'string' },
    profile: { type: 'string' },
    tsx: { type: 'boolean', default: false },
    'keep-database': { type: 'boolean', default: false },
    'skip-analyze': { type: 'boolean', default: false }
  }
})
const integer = (name: string, value: string | undefined, min = 1) => {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}`)
  return n
}
const settings = {
  products: integer('products', args.products),
  durationSeconds: integer('duration', args.duration),
  connections: integer('connections', args.connections),
  warmupSeconds: integer('warmup', args.warmup, 0),
  seed: integer('seed', args.seed, 0),
  orders: integer('orders', args.orders, 0),
  /** The app's pool size; undefined: the app's own default (as in production). */
  pool: args.pool === undefined ? undefined : integer('pool', args.pool),
  analyze: !args['skip-analyze']
}

if (!['auto', 'pgbench', 'node'].includes(args.raw)) throw new Error('--raw must be auto, pgbench or node')

const AIMS = {
  productRatio: 0.5,
  listRatio: 0.5,
  searchP99Ms: 50,
  searchAtProducts: 100_000,
  serverMb: 200,
  orderCreateRatio: 0.5,
  orderReadP99Ms: 50,
  orderReadsAt: 1_000_000
}
/** How many of the app's products the bare server holds and rotates over. */
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

/** GET /external/v1/orders's answer (schemas/orders.ts OrderPage). */
interface OrderPage { items: OrderSummary[], page: number, pageSize: number, total: number }

const log = (line = '') => process.stdout.write(`${line}\n`)
const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

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

/** A fresh PostgreSQL database for the run (dropped at clean-up), or null for PGlite. */
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

function shuffled<T> (list: readonly T[], seed: number): T[] {
  const random = randomGenerator(seed)
  const copy = [...list]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
  }
  return copy
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

/** Samples the app's RSS every 100 ms; VmHWM, read at the end, also catches what falls between samples. */
function sampleMemory (pid: number) {
  let maxRss = 0
  const timer = setInterval(() => {
    try {
      maxRss = Math.max(maxRss, memoryOf(pid).rss)
    } catch { /* the process is gone */ }
  }, 100)
  return { stop: () => clearInterval(timer), maxRss: () => maxRss }
}

async function main () {
  log(`storefront-api benchmark: ${num(settings.products)} products, ${settings.durationSeconds} s a run after ${settings.warmupSeconds} s of warm-up, ${settings.connections} connections`)
  const loadBefore = loadavg()
  log(`node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}) shared by autocannon, the servers and the database; load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')}`)

  let started = performance.now()
  const bench = generateCatalog({ products: settings.products, seed: settings.seed })
  const withCombinations = bench.catalog.products!.filter((p) => p.combinations?.length)
  log(`catalogue: ${num(withCombinations.length)} products with ${num(withCombinations.reduce((n, p) => n + p.combinations!.length, 0))} combinations, generated in ${num(performance.now() - started)} ms`)

  // Which scenarios run: known before the database is filled, so that what none needs is not.
  const productIds = shuffled(bench.productIds, settings.seed)
  const bareIds = productIds.slice(0, BARE_PRODUCTS)
  const lastPage = Math.ceil(settings.products / PAGE_SIZE)
  const pages = [...new Set([1, 2, 3, 10, Math.ceil(lastPage / 2), lastPage].filter((p) => p <= lastPage))]
  const catalogue = catalogueScenarios({ productIds, bareIds, pages, lastPage, searchTerms: bench.searchTerms.map((t) => t.term) })
  const selected = selectScenarios([...catalogue, ...ORDER_SCENARIOS], args.only)
  const wants = (group: ScenarioGroup) => [...catalogue, ...ORDER_SCENARIOS].some((s) => s.group === group && selected.has(s.name))

  const pg = await createBenchDatabase()
  if (!pg) {
    if (wants('order-reads')) log('order reads: they need PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL) for the bulk-filled orders table; skipped')
    if (selected.has('order-create-raw')) log('order creation: the comparison with raw SQL needs PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL); only the app side runs, on untracked stock')
    selected.delete('order-create-raw')
    for (const s of ORDER_SCENARIOS) if (s.group === 'order-reads') selected.delete(s.name)
  }
  const ordersWanted = pg !== null && wants('order-reads') && settings.orders > 0
  if (pg && wants('order-reads') && settings.orders === 0) {
    for (const s of ORDER_SCENARIOS) if (s.group === 'order-reads') selected.delete(s.name)
    log('order reads: --orders 0, skipped')
  }

  let runtime: Runtime = {}
  if (!args.tsx) {
    started = performance.now()
    const compiled = await compileForBench()
    cleanups.push(compiled.remove)
    runtime = { compiledDir: compiled.dir }
    log(`servers: compiled JavaScript (${num(performance.now() - started)} ms to compile), one process each`)
  } else {
    log('servers: TypeScript through tsx, one process each (their RSS includes tsx)')
  }

  // The pool order lines come from: with PostgreSQL tracked stock too (raised very large),
  // with PGlite (whose data the app's process holds) untracked stock only.
  const orderLines = chooseOrderLines(bench.catalog, { count: ORDER_LINES, seed: settings.seed, tracked: pg !== null })
  let app: { server: Server, key: string }
  let benchKeyId = ''
  let lineTable: LineTable | undefined
  let bulk: BulkOrders | undefined
  let readTerms: Awaited<ReturnType<typeof orderReadTerms>> | undefined
  started = performance.now()
  const importLine = (ms: number) => log(`import: ${num(ms)} ms${settings.analyze ? ', then ANALYZE' : ' (no ANALYZE)'}`)
  if (pg) {
    log(`database: ${pg.label}`)
    const database = await openDatabase({ url: pg.url, poolSize: 4 })
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} })
    try {
      await migrateDatabase(database, pg.url)
      const { key, importMs } = await seedStore(database, bench, { analyze: settings.analyze })
      importLine(importMs)
      const [row] = await sql<Array<{ id: string }>>`select id from api_keys where name = 'bench'`
      benchKeyId = row!.id
      if (wants('order-create') || ordersWanted) {
        await raiseStock(sql, orderLines)
        lineTable = await createLineTable(sql, orderLines)
      }
      if (ordersWanted) {
        const others: string[] = []
        for (let i = 1; i <= 3; i++) others.push((await createApiKey(database.db, { name: `bench-other-${i}`, scopes: ['orders:list', 'orders:find'] })).id)
        const fillStarted = performance.now()
        bulk = await bulkInsertOrders(sql, {
          count: settings.orders,
          chunk: BULK_CHUNK,
          benchKeyId,
          otherKeyIds: others,
          lines: lineTable!.lines,
          onChunk: (done) => {
            if (done % 500_000 === 0 && done < settings.orders) log(`  … ${num(done)} orders in ${num((performance.now() - fillStarted) / 1000, 1)} s`)
          }
        })
        const [size] = await sql<Array<{ orders: string, items: string, total: string }>>`
          select pg_size_pretty(pg_total_relation_size('orders')) as orders, pg_size_pretty(pg_total_relation_size('order_items')) as items,
            (select count(*) from order_items)::text as total`
        log(`orders: ${num(bulk.count)} bulk-inserted with ${num(Number(size!.total))} items (${num(bulk.benchCount)} for the bench key, the rest over 3 other keys) in ${num(bulk.ms / 1000, 1)} s, chunks of ${num(BULK_CHUNK)}, then VACUUM ANALYZE; orders ${size!.orders}, order_items ${size!.items} with their indexes`)
        readTerms = await orderReadTerms(sql, bulk, benchKeyId, settings.seed)
      }
      app = await startAppServer({ ...runtime, profileDir: args.profile }, { databaseUrl: pg.url, key, ...(settings.pool ? { poolSize: settings.pool } : {}) })
    } finally {
      await sql.end({ timeout: 5 })
      await database.close()
    }
  } else {
    log('database: PGlite in memory, in the app\'s process')
    app = await startAppServer({ ...runtime, profileDir: args.profile }, { seed: { products: settings.products, seed: settings.seed, analyze: settings.analyze } }, importLine)
  }
  cleanups.push(app.server.stop)
  const appPid = app.server.child.pid!
  log(`app: ready ${num(performance.now() - started)} ms after start${pg ? `, PostgreSQL pool: ${settings.pool ?? 'the app\'s default'}` : ''}, RSS ${num(memoryOf(appPid).rss / MB, 1)} MB idle (its peak is measured from here)`)

  let bare: Server | undefined
  if (wants('catalogue')) {
    // The bare server answers what the app answers: fetched from the app before any load.
    const bareProducts: Product[] = []
    for (const id of bareIds) bareProducts.push(await getJson<Product>(app.server, `/external/v1/products/${id}`, app.key))
    const firstPage = await getJson<ProductPage>(app.server, '/external/v1/products', app.key)
    if (firstPage.total !== settings.products) throw new Error(`the app lists ${firstPage.total} products, expected ${settings.products}`)
    for (const { term, matches } of bench.searchTerms) {
      const found = await getJson<ProductPage>(app.server, `/external/v1/products?query=${encodeURIComponent(term)}`, app.key)
      if (found.total !== matches) throw new Error(`query=${term} finds ${found.total} products, expected ${matches}`)
    }
    const counts = bench.searchTerms.map((t) => t.matches)
    log(`search: ${bench.searchTerms.length} terms matching ${Math.min(...counts)}–${Math.max(...counts)} products each (checked against the app), e.g. "${bench.searchTerms[0]?.term}"`)
    bare = await startBareServer(runtime, { products: bareProducts, page: firstPage })
    cleanups.push(bare.stop)
  }

  let orderReads: Scenario[] = []
  if (bulk && readTerms) {
    // The app must see what the fill wrote: the key's total (order_counts), each term's matches, a lookup.
    const listTotal = (await getJson<OrderPage>(app.server, '/external/v1/orders', app.key)).total
    if (listTotal !== bulk.benchCount) throw new Error(`the app lists ${listTotal} orders for the key, expected ${bulk.benchCount}`)
    for (const { term, matches } of [...readTerms.numberPrefixes, ...readTerms.nameFragments]) {
      const found = await getJson<OrderPage>(app.server, `/external/v1/orders?query=${encodeURIComponent(term)}`, app.key)
      if (found.total !== matches) throw new Error(`orders?query=${term} finds ${found.total} orders, expected ${matches}`)
    }
    const order = await getJson<Order>(app.server, `/external/v1/orders/${readTerms.orderNumbers[0]}`, app.key)
    if (order.items.length === 0) throw new Error(`order ${readTerms.orderNumbers[0]} has no items`)
    const ordersLastPage = Math.ceil(bulk.benchCount / PAGE_SIZE)
    orderReads = orderReadScenarios({ orders: bulk.benchCount, lastPage: ordersLastPage, deepPage: Math.min(DEEP_PAGE, ordersLastPage), ...readTerms })
    log(`order reads: totals and matches of ${readTerms.numberPrefixes.length + readTerms.nameFragments.length} queries checked against the app`)
  }

  let orderCreate: Scenario[] = []
  if (wants('order-create')) {
    // One order first: the pool's lines must be orderable.
    const body = orderBodies(orderLines, settings.seed)
    const res = await fetch(`${app.server.baseUrl}/external/v1/orders`, { method: 'POST', headers: { 'x-api-key': app.key, 'content-type': 'application/json' }, body: body() })
    if (res.status !== 201) throw new Error(`POST /external/v1/orders answered ${res.status}: ${await res.text()}`)
    await res.arrayBuffer()
    let raw: { tool: string, run: (durationSeconds: number) => Promise<LoadResult> } | undefined
    if (pg && lineTable && selected.has('order-create-raw')) {
      const table = lineTable
      const usePgbench = args.raw === 'pgbench' || (args.raw === 'auto' && await hasPgbench())
      if (args.raw === 'auto' && !usePgbench) log('order creation: pgbench not found, the raw side runs with postgres.js')
      const connections = settings.connections
      raw = usePgbench
        ? { tool: 'pgbench', run: (durationSeconds) => runPgbench({ url: pg.url, script: pgbenchScript(table, benchKeyId), connections, durationSeconds }) }
        : { tool: 'postgres.js', run: (durationSeconds) => runRawNode({ url: pg.url, lines: orderLines, apiKeyId: benchKeyId, connections, durationSeconds, seed: settings.seed }) }
    }
    orderCreate = orderCreateScenarios({ body, lines: orderLines.length, trackedLines: orderLines.filter((l) => l.tracked).length, ...(raw ? { raw } : {}) })
  }

  const scenarios: Scenario[] = [...catalogue, ...orderReads, ...orderCreate].filter((s) => selected.has(s.name))

  log()
  const results = new Map<string, LoadResult>()
  /** CPU the server's process spent per request: what the server costs, apart from the database server. */
  const cpuPerRequest = new Map<string, number>()
  /** CPU PostgreSQL's backends of the bench database spent per request (local PostgreSQL only). */
  const dbCpuPerRequest = new Map<string, number>()
  const monitor = pg ? postgres(pg.url, { max: 1, onnotice: () => {}, connection: { application_name: 'storefront-bench-monitor' } }) : undefined
  if (monitor) cleanups.push(() => monitor.end({ timeout: 5 }))
  const localDatabase = pg !== null && ['127.0.0.1', 'localhost', '::1', '[::1]', ''].includes(new URL(pg.url).hostname)
  const appQueries = monitor
    ? async () => (await monitor<Array<{ query: string }>>`select left(query, 120) as query from pg_stat_activity
        where datname = current_database() and state <> 'idle' and application_name like 'storefront-api/%' and pid <> pg_backend_pid()`).map((r) => r.query)
    : undefined
  const backends = async () => (await monitor!<Array<{ pid: number }>>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`).map((r) => r.pid)
  /** Latency of the scenarios that ask for it from a single connection. */
  const oneConnection = new Map<string, LoadResult>()
  const memory = sampleMemory(appPid)
  for (const scenario of scenarios) {
    const server = scenario.server === 'app' ? app.server : scenario.server === 'bare' ? bare : undefined
    const headers: Record<string, string> = scenario.server === 'app' ? { 'x-api-key': app.key } : {}
    const load = async (durationSeconds: number): Promise<LoadResult> => {
      if (scenario.run) return await scenario.run(durationSeconds)
      if (!server || !scenario.next) throw new Error(`scenario ${scenario.name} has no server or requests`)
      return await runLoad({ baseUrl: server.baseUrl, next: scenario.next, headers, durationSeconds, connections: scenario.connections ?? settings.connections })
    }
    if (settings.warmupSeconds > 0 && !scenario.cold) {
      await load(settings.warmupSeconds)
      if (scenario.server === 'app') await settle(app.server, appQueries)
    }
    const cpuBefore = server ? cpuTimeOf(server.child.pid!) : 0
    const dbCpu = monitor && localDatabase && scenario.server !== 'bare' ? backendCpu(backends) : undefined
    await dbCpu?.start()
    const result = await load(settings.durationSeconds)
    if (server) cpuPerRequest.set(scenario.name, (cpuTimeOf(server.child.pid!) - cpuBefore) / Math.max(result.total, 1))
    if (dbCpu) dbCpuPerRequest.set(scenario.name, (await dbCpu.stop()) / Math.max(result.total, 1))
    results.set(scenario.name, result)
    const waited = scenario.server === 'app' ? await settle(app.server, appQueries) : 0
    if (scenario.oneConnection && server && scenario.next) {
      // The same requests one at a time: a request's own latency, without the queueing of the run above.
      oneConnection.set(scenario.name, await runLoad({ baseUrl: server.baseUrl, next: scenario.next, headers, durationSeconds: ONE_CONNECTION_SECONDS, connections: 1 }))
    }
    log(`${scenario.name.padEnd(NAME_WIDTH)} ${scenario.description}${waited > 1000 ? ` [${num(waited / 1000, 1)} s to work off its queue afterwards]` : ''}`)
  }
  memory.stop()
  const peak = Math.max(memoryOf(appPid).peak, memory.maxRss())
  const barePeak = bare ? memoryOf(bare.child.pid!).peak : undefined

  const ratioOf = (scenario: Scenario | undefined) => {
    const base = scenario?.baseline === undefined ? undefined : results.get(scenario.baseline)
    const own = scenario && results.get(scenario.name)
    return base && own ? own.requestsPerSecond / base.requestsPerSecond : undefined
  }
  log()
  const header = `${'scenario'.padEnd(NAME_WIDTH)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'non-2xx'.padStart(8)} ${'errors'.padStart(7)} ${'cpu ms/req'.padStart(10)} ${'db ms/req'.padStart(9)}  ratio`
  log(header)
  log('-'.repeat(header.length))
  for (const scenario of scenarios) {
    const r = results.get(scenario.name)!
    const ratio = ratioOf(scenario)
    const cpu = cpuPerRequest.get(scenario.name)
    const db = dbCpuPerRequest.get(scenario.name)
    log(`${scenario.name.padEnd(NAME_WIDTH)} ${num(r.requestsPerSecond).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${num(r.non2xx).padStart(8)} ${num(r.errors).padStart(7)} ${(cpu === undefined ? '-' : num(cpu, 2)).padStart(10)} ${(db === undefined ? '-' : num(db, 2)).padStart(9)}  ${ratio === undefined ? '' : `${ratio.toFixed(2)} of ${scenario.baseline}`}`)
  }
  if (oneConnection.size > 0) {
    log()
    log(`from 1 connection (${ONE_CONNECTION_SECONDS} s right after each run): a request's own latency, without queueing`)
    for (const [name, r] of oneConnection) log(`${name.padEnd(NAME_WIDTH)} ${num(r.requestsPerSecond).padStart(9)} ${String(r.p50).padStart(7)} ${String(r.p99).padStart(7)} ${num(r.non2xx).padStart(8)} ${num(r.errors).padStart(7)}`)
  }
  log()
  log('req/s: requests (orders, for order-create-raw: transactions) a second; ratio: this rate ÷ its baseline\'s, measured in the same run')
  log(`cpu ms/req: CPU time of the server's own process per request${pg ? ' (PostgreSQL\'s work is not in it)' : ' (PGlite\'s work is in it)'}`)
  if (dbCpuPerRequest.size > 0) log('db ms/req: CPU time of the PostgreSQL backends connected to the bench database, per request (sampled every 200 ms: a lower bound)')
  log(`peak RSS (VmHWM of the process, from idle through the runs): app ${num(peak / MB, 1)} MB${pg ? '' : ' (PGlite included)'}${barePeak === undefined ? '' : `, bare server ${num(barePeak / MB, 1)} MB`}`)

  log()
  log('aims:')
  const verdict = (value: number | undefined, ok: (v: number) => boolean) => (value === undefined ? 'not measured' : ok(value) ? 'met' : 'MISSED')
  const named = (name: string) => scenarios.find((s) => s.name === name)
  const productRatio = ratioOf(named('product'))
  const listRatio = ratioOf(named('list'))
  const searchP99 = results.get('search')?.p99
  if (scenarios.some((sc) => sc.group === 'catalogue')) {
    log(`  product ≥ ${AIMS.productRatio} of bare:  ${productRatio?.toFixed(2) ?? '-'} ${verdict(productRatio, (r) => r >= AIMS.productRatio)} (hot ids: ${ratioOf(named('product-hot'))?.toFixed(2) ?? '-'})`)
    log(`  list ≥ ${AIMS.listRatio} of bare:     ${listRatio?.toFixed(2) ?? '-'} ${verdict(listRatio, (r) => r >= AIMS.listRatio)} (crawl: ${ratioOf(named('list-crawl'))?.toFixed(2) ?? '-'})`)
    const scale = settings.products < AIMS.searchAtProducts ? ` (the aim is for ${num(AIMS.searchAtProducts)} products: --products ${AIMS.searchAtProducts})` : ''
    log(`  search p99 < ${AIMS.searchP99Ms} ms:     ${searchP99 ?? '-'} ms ${verdict(searchP99, (p) => p < AIMS.searchP99Ms)} at ${settings.connections} connections; ${results.get('search-1-conn')?.p99 ?? '-'} ms from 1 connection${scale}`)
  }
  log(`  server < ${AIMS.serverMb} MB:        ${num(peak / MB, 1)} MB ${verdict(peak / MB, (mb) => mb < AIMS.serverMb)}`)
  const create = results.get('order-create')
  const createRaw = results.get('order-create-raw')
  const createRatio = ratioOf(named('order-create'))
  if (create || createRaw) {
    const failures = (create ? create.non2xx + create.errors : 0) + (createRaw?.errors ?? 0)
    log(`  order-create ≥ ${AIMS.orderCreateRatio} of raw SQL: ${createRatio?.toFixed(2) ?? '-'} ${verdict(createRatio, (r) => r >= AIMS.orderCreateRatio)} (${create ? num(create.requestsPerSecond) : '-'} ÷ ${createRaw ? num(createRaw.requestsPerSecond) : '-'} orders/s); failed orders: ${num(failures)} ${failures === 0 ? 'met' : 'MISSED'}`)
  }
  const reads = orderReads.filter((s) => results.has(s.name))
  if (reads.length > 0) {
    const worst = reads.reduce((w, s) => (results.get(s.name)!.p99 > results.get(w.name)!.p99 ? s : w))
    const worstP99 = results.get(worst.name)!.p99
    const readScale = settings.orders < AIMS.orderReadsAt ? ` (the aim is for ${num(AIMS.orderReadsAt)} orders: --orders ${AIMS.orderReadsAt})` : ''
    log(`  order reads p99 < ${AIMS.orderReadP99Ms} ms: worst ${worstP99} ms (${worst.name}) ${verdict(worstP99, (p) => p < AIMS.orderReadP99Ms)} at ${settings.connections} connections, ${num(settings.orders)} orders${readScale}`)
    for (const s of reads) {
      const p99 = results.get(s.name)!.p99
      if (p99 >= AIMS.orderReadP99Ms) log(`    ${s.name}: p99 ${p99} ms MISSED`)
    }
  }
  const busy = loadavg()[0]! > cpus().length
  log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}${busy ? ` — above ${cpus().length} CPUs: other work shared them, read the ratios rather than the rates` : ''}`)
  const failed = [...results.values()].reduce((n, r) => n + r.non2xx + r.errors, 0)
  if (failed > 0) log(`  WARNING: ${num(failed)} requests failed (non-2xx or connection errors): the rates above are not comparable`)

  if (args.json) {
    writeFileSync(args.json, `${JSON.stringify({
      settings,
      database: pg ? 'postgres' : 'pglite',
      runtime: args.tsx ? 'tsx' : 'compiled',
      loadAverage: { before: loadBefore, after: loadavg() },
      orders: bulk ? { bulk, numberPrefixes: readTerms?.numberPrefixes, nameFragments: readTerms?.nameFragments } : undefined,
      results: Object.fromEntries(scenarios.map((s) => [s.name, { ...results.get(s.name), oneConnection: oneConnection.get(s.name), cpuMsPerRequest: cpuPerRequest.get(s.name), dbCpuMsPerRequest: dbCpuPerRequest.get(s.name), ratio: ratioOf(s), baseline: s.baseline }])),
      peakRssMb: { app: peak / MB, bare: barePeak === undefined ? undefined : barePeak / MB }
    }, null, 2)}\n`)
  }
}

try {
  await main()
} finally {
  await cleanUp()
}
