// What the benchmark loads. Each scenario names the server it targets and builds its next
// request (autocannon sends it), or runs its own driver (the raw-SQL order transaction);
// an app scenario names its ceiling: the bare server's scenario answering the same JSON from
// memory, or the raw SQL for order creation, measured in the same run. A fixed scenario is a
// piece of work rather than a timed load (a crawl of the whole list, a read of the whole
// feed): it runs once, without warm-up, and reports its own figures. Names are lower-case
// words joined by hyphens, so `--only` takes them as typed (see selectScenarios).
import { PAGE_SIZE } from '../schemas/common.ts'
import type { LoadResult, RequestSpec, SequenceStep } from './load.ts'

export type ScenarioGroup = 'catalogue' | 'order-reads' | 'feed' | 'order-create' | 'export'

export interface Scenario {
  name: string
  group: ScenarioGroup
  /**
   * raw: no HTTP server, the scenario's own `run` drives the database. bare: the bare server's
   * in-memory routes; db: its routes that read pre-rendered JSON from PostgreSQL.
   */
  server: 'app' | 'bare' | 'db' | 'raw'
  /** A fixed piece of work done by `run` (whatever the duration), once, without warm-up. */
  fixed?: boolean
  /**
   * Raw scenarios measured together with another, by `runPair` (the same clients alternate
   * between the two in slices of a second), so that both see the same machine.
   */
  alternatesWith?: string
  /** Both scenarios' runs, this one's first, each of the given length (see alternatesWith). */
  runPair?: (durationSeconds: number) => Promise<[LoadResult, LoadResult]>
  description: string
  /** The scenario whose rate this one's is divided by (run whenever this one is). */
  baseline?: string
  /** Further ceilings this one's rate is also divided by (run whenever this one is, when they exist). */
  ceilings?: string[]
  /** After the run, a short one from a single connection: the latency without queueing. */
  oneConnection?: boolean
  /** Count the app's read-cache hits during the run (from PostgreSQL's statistics: see run.ts). */
  cacheHits?: boolean
  /** The next request (app and bare scenarios). */
  next?: () => RequestSpec
  /** Instead of `next`: requests each connection sends in turn (a flow whose later steps use earlier answers). */
  sequence?: SequenceStep[]
  /** A run of the given length (raw scenarios), or the fixed work (fixed scenarios). */
  run?: (durationSeconds: number) => Promise<LoadResult>
  /**
   * What the scenario needs around its load: run before the warm-up, it returns what ends
   * the scenario once the load has been worked off, which returns the scenario's own figures.
   */
  setUp?: () => Promise<() => Promise<Record<string, number>>>
}

/** A uniform draw from a list. */
export function anyOf<T> (list: readonly T[], random: () => number): () => T {
  return () => list[Math.floor(random() * list.length)]!
}

/** A uniform draw from 1…n. */
export const oneTo = (n: number, random: () => number) => 1 + Math.floor(random() * Math.max(1, n))

/** A list filter with how many products it matches. */
export interface ListFilter { label: string, query: string, total: number }

export interface CatalogueFixture {
  random: () => number
  /** Every product id. */
  productIds: string[]
  /** The ids the bare server holds. */
  bareIds: string[]
  /** Products in the store: the unfiltered list has ceil(products / 25) pages. */
  products: number
  /** The filters list-filtered draws from: each category, each brand, isAvailable=true. */
  filters: { category: ListFilter[], brand: ListFilter[], available: ListFilter[] }
  /** The next search term (see catalog.ts namePieces). */
  searchTerm: () => string
  /** The database ceilings (db-product, db-list), when the bare server has pre-rendered JSON in PostgreSQL. */
  database?: { label: string }
  /** An example term, for the description. */
  searchExamples: string[]
}

const pagesOf = (total: number) => Math.max(1, Math.ceil(total / PAGE_SIZE))
const thousands = (n: number) => n.toLocaleString('en-US')

export function catalogueScenarios (fixture: CatalogueFixture): Scenario[] {
  const { random } = fixture
  const product = anyOf(fixture.productIds, random)
  const bareProduct = anyOf(fixture.bareIds, random)
  const lastPage = pagesOf(fixture.products)
  const kinds = [fixture.filters.category, fixture.filters.brand, fixture.filters.available].filter((list) => list.length > 0)
  const filtered = () => {
    const list = kinds[Math.floor(random() * kinds.length)]!
    const filter = list[Math.floor(random() * list.length)]!
    return `/external/v1/products?${filter.query}&page=${oneTo(pagesOf(filter.total), random)}`
  }
  const range = (list: ListFilter[]) => {
    const [min, max] = [Math.min(...list.map((f) => f.total)), Math.max(...list.map((f) => f.total))]
    return min === max ? thousands(min) : `${thousands(min)}–${thousands(max)}`
  }
  const byId = fixture.database ? ['db-product'] : []
  const byPage = fixture.database ? ['db-list'] : []
  const databaseCeilings: Scenario[] = fixture.database
    ? [{
        name: 'db-product',
        group: 'catalogue',
        server: 'db',
        description: `ceiling: GET /db/products/{id}, a random id of all ${thousands(fixture.productIds.length)}: the app's product JSON kept in PostgreSQL (${fixture.database.label}), sent as it is`,
        next: () => ({ path: `/db/products/${product()}` })
      }, {
        name: 'db-list',
        group: 'catalogue',
        server: 'db',
        description: `ceiling: GET /db/products?page=N, N uniform in 1…${thousands(lastPage)}: the app's page JSON kept in PostgreSQL, sent as it is`,
        next: () => ({ path: `/db/products?page=${oneTo(lastPage, random)}` })
      }]
    : []
  return [
    ...databaseCeilings,
    {
      name: 'bare-product',
      group: 'catalogue',
      server: 'bare',
      description: `ceiling: GET /products/{id} from memory, a random one of ${fixture.bareIds.length} of the app's product JSON`,
      next: () => ({ path: `/products/${bareProduct()}` })
    },
    {
      name: 'product',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products/{id}, a random id of all ${thousands(fixture.productIds.length)} each request`,
      baseline: 'bare-product',
      ceilings: byId,
      cacheHits: true,
      next: () => ({ path: `/external/v1/products/${product()}` })
    },
    {
      name: 'bare-list',
      group: 'catalogue',
      server: 'bare',
      description: 'ceiling: GET /products from memory, the app\'s 25-product page 1',
      next: () => ({ path: '/products' })
    },
    {
      name: 'list',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?page=N, N uniform in 1…${thousands(lastPage)}`,
      baseline: 'bare-list',
      ceilings: byPage,
      next: () => ({ path: `/external/v1/products?page=${oneTo(lastPage, random)}` })
    },
    {
      name: 'list-filtered',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?<filter>&page=N: a random one of ${fixture.filters.category.length} categories (${range(fixture.filters.category)} products), ` +
        `${fixture.filters.brand.length} brands (${range(fixture.filters.brand)}) or isAvailable=true (${range(fixture.filters.available)}), N uniform over its pages`,
      baseline: 'bare-list',
      ceilings: byPage,
      oneConnection: true,
      next: () => ({ path: filtered() })
    },
    {
      name: 'search',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?query=<a random 3–6 letter piece of a random product's name>, e.g. ${fixture.searchExamples.map((t) => `"${t}"`).join(', ')}`,
      baseline: 'bare-list',
      ceilings: byPage,
      oneConnection: true,
      next: () => ({ path: `/external/v1/products?query=${encodeURIComponent(fixture.searchTerm())}` })
    }
  ]
}

/** The sequential crawl of the whole product list by cursor (bench/sequential.ts crawlByCursor). */
export function crawlScenario (products: number, crawl: () => Promise<LoadResult>): Scenario {
  return {
    name: 'crawl-cursor',
    group: 'catalogue',
    server: 'app',
    fixed: true,
    description: `one connection crawls all ${thousands(products)} products by cursor: GET /external/v1/products, then each nextCursor until null (${thousands(pagesOf(products))} pages)`,
    run: crawl
  }
}

export interface FeedFixture {
  random: () => number
  /** Seeded events: positions 1…events; the bench key sees `visible` of them. */
  events: number
  visible: number
  /** Reads the whole feed from its start, one request at a time (bench/sequential.ts readFeedFromStart). */
  readFromStart: () => Promise<LoadResult>
  sequentialLimit: number
}

export function feedScenarios (fixture: FeedFixture): Scenario[] {
  const read = (limit: number): Scenario => ({
    name: limit === 100 ? 'feed-read' : `feed-read-${limit}`,
    group: 'feed',
    server: 'app',
    description: `GET /external/v1/changes?after=evt_<uniform in 0…${thousands(fixture.events - limit)}>&limit=${limit}, a feed of ${thousands(fixture.events)} events (${thousands(fixture.visible)} visible to the key)`,
    oneConnection: true,
    next: () => ({ path: `/external/v1/changes?after=evt_${Math.floor(fixture.random() * Math.max(1, fixture.events - limit + 1))}&limit=${limit}` })
  })
  return [
    read(100),
    read(500),
    {
      name: 'feed-sequential',
      group: 'feed',
      server: 'app',
      fixed: true,
      description: `one connection reads the whole feed from its start, limit=${fixture.sequentialLimit}, following nextCursor while hasMore`,
      run: fixture.readFromStart
    }
  ]
}

export interface OrderCreateFixture {
  /** The next create-order body (JSON). */
  body: () => string
  /** Lines in the pool, and how many take tracked stock. */
  lines: number
  trackedLines: number
  /**
   * The raw-SQL run of the same transaction, with the change-log write (`feed`) or without,
   * and both alternating (without first); absent without PostgreSQL.
   */
  raw?: { tool: string, run: (durationSeconds: number, feed: boolean) => Promise<LoadResult>, runPair: (durationSeconds: number) => Promise<[LoadResult, LoadResult]> }
  /** The least an order's transaction must do, run by pgbench (bench/orders.ts pgbenchMinimalScript); absent without pgbench. */
  minimal?: (durationSeconds: number) => Promise<LoadResult>
  /** order-create-webhooks: how many receivers, and its set-up (bench/webhooks.ts setUpWebhooks); absent: that scenario is not built. */
  webhooks?: { receivers: number, setUp: () => Promise<() => Promise<Record<string, number>>> }
}

export function orderCreateScenarios (fixture: OrderCreateFixture): Scenario[] {
  const scenarios: Scenario[] = []
  if (fixture.raw) {
    const raw = fixture.raw
    scenarios.push({
      name: 'order-create-raw-nofeed',
      group: 'order-create',
      server: 'raw',
      description: 'order-create-raw without its change_events INSERT: what orders would run at without the feed (the same clients alternate between the two in 1-second slices, A B B A …)',
      alternatesWith: 'order-create-raw',
      run: (seconds) => raw.run(seconds, false),
      runPair: raw.runPair
    }, {
      name: 'order-create-raw',
      group: 'order-create',
      server: 'raw',
      description: `ceiling: the same transaction in raw SQL (${raw.tool}, one connection a client): conditional stock decrements, the products' state refreshed, order row with nextval, ` +
        'item rows, order_counts upsert, the INSERT of its change events (order.created, product.updated); its ratio is to order-create-raw-nofeed: what the events cost',
      baseline: 'order-create-raw-nofeed',
      run: (seconds) => raw.run(seconds, true)
    })
  }
  if (fixture.minimal) {
    scenarios.push({
      name: 'order-create-min',
      group: 'order-create',
      server: 'raw',
      description: 'ceiling: only what an order must, in raw SQL (pgbench, one connection a client): two conditional stock decrements, the order row with nextval, two item rows in one INSERT',
      run: fixture.minimal
    })
  }
  const next = () => ({ method: 'POST' as const, path: '/external/v1/orders', body: fixture.body(), headers: { 'content-type': 'application/json' } })
  scenarios.push({
    name: 'order-create',
    group: 'order-create',
    server: 'app',
    description: `POST /external/v1/orders, 1–3 lines of 1–2 units from ${fixture.lines} products and combinations (${fixture.trackedLines > 0 ? `${fixture.trackedLines} with tracked stock, raised very large, the rest untracked` : 'untracked stock'})`,
    ...(fixture.raw ? { baseline: 'order-create-raw' } : {}),
    ...(fixture.minimal ? { ceilings: ['order-create-min'] } : {}),
    next
  })
  // Hold, then order with the hold: each connection alternates the two requests, so a flow is two 2xx answers.
  scenarios.push({
    name: 'hold-then-order',
    group: 'order-create',
    server: 'app',
    description: 'POST /external/v1/reservations with order-create\'s lines, then POST /external/v1/orders with the same lines and its reservationId (the order consumes the hold: ' +
      'no second decrement); ok/s counts both answers, so flows a second are half of it; ratio to order-create',
    baseline: 'order-create',
    next,
    sequence: [{
      next: (context) => {
        const body = JSON.parse(fixture.body()) as { items: unknown[] }
        context.order = body
        return { method: 'POST', path: '/external/v1/reservations', body: JSON.stringify({ items: body.items, ttlSeconds: 60 }), headers: { 'content-type': 'application/json' } }
      },
      onResponse: (status, body, context) => { context.reservationId = status === 201 ? (JSON.parse(body) as { id: string }).id : undefined }
    }, {
      next: (context) => ({
        method: 'POST',
        path: '/external/v1/orders',
        body: JSON.stringify({ ...(context.order as object), ...(context.reservationId ? { reservationId: context.reservationId } : {}) }),
        headers: { 'content-type': 'application/json' }
      })
    }]
  })
  if (fixture.webhooks) {
    const { receivers, setUp } = fixture.webhooks
    scenarios.push({
      name: 'order-create-webhooks',
      group: 'order-create',
      server: 'app',
      description: `order-create's load with ${receivers} webhook endpoints subscribed to every event (POST /external/v1/webhooks, events ["*"]), each a local receiver answering 204 at once ` +
        '(one child process); afterwards every event published meanwhile must reach every receiver: latency from the event\'s occurred_at to its receipt; ratio to order-create',
      baseline: 'order-create',
      setUp,
      next
    })
  }
  return scenarios
}

export interface OrderReadFixture {
  /** The bench key's orders, and its list's last page. */
  orders: number
  lastPage: number
  deepPage: number
  /** A random order-number prefix and a random customer-name fragment of the key's orders. */
  numberPrefix: () => string
  nameFragment: () => string
  examples: { numberPrefixes: string[], nameFragments: string[] }
}

export function orderReadScenarios (fixture: OrderReadFixture): Scenario[] {
  const list = (name: string, description: string, path: () => string): Scenario => ({
    name, group: 'order-reads', server: 'app', description, baseline: 'bare-orders', oneConnection: true, next: () => ({ path: path() })
  })
  const quoted = (terms: string[]) => terms.map((t) => `"${t}"`).join(', ')
  return [
    { name: 'bare-orders', group: 'order-reads', server: 'bare', description: 'ceiling: GET /orders from memory, the app\'s 25-order page 1', next: () => ({ path: '/orders' }) },
    list('orders-page-1', `GET /external/v1/orders, the newest 25 of the key's ${thousands(fixture.orders)} orders`, () => '/external/v1/orders'),
    list('orders-deep', `GET /external/v1/orders?page=${thousands(fixture.deepPage)} (offset ${thousands((fixture.deepPage - 1) * PAGE_SIZE)}; the last page is ${thousands(fixture.lastPage)})`,
      () => `/external/v1/orders?page=${fixture.deepPage}`),
    list('orders-number', `GET /external/v1/orders?query=<a random order number of the key without its last digit>, e.g. ${quoted(fixture.examples.numberPrefixes)}`,
      () => `/external/v1/orders?query=${fixture.numberPrefix()}`),
    list('orders-name', `GET /external/v1/orders?query=<a random customer-name fragment>, e.g. ${quoted(fixture.examples.nameFragments)}`,
      () => `/external/v1/orders?query=${encodeURIComponent(fixture.nameFragment())}`)
  ]
}

export interface ExportFixture {
  products: number
  /** The whole products export read to its last line by one client (bench/exports.ts readWholeExport). */
  readProducts: () => Promise<LoadResult>
  /** Its floor, a COPY of the stored documents to a client; absent without PostgreSQL. */
  copyProducts?: () => Promise<LoadResult>
  /** The bench key's orders, likewise; absent without the bulk-filled orders (PostgreSQL). */
  orders?: { count: number, read: () => Promise<LoadResult>, copy: () => Promise<LoadResult> }
}

/** The exports, each beside its floor: a bare COPY of the same rows to a client, in the same run. */
export function exportScenarios (fixture: ExportFixture): Scenario[] {
  const scenarios: Scenario[] = []
  if (fixture.copyProducts) {
    scenarios.push({
      name: 'products-export-floor',
      group: 'export',
      server: 'raw',
      fixed: true,
      description: `floor: COPY (the stored documents of all ${thousands(fixture.products)} products, in the list's order) TO STDOUT, read by one postgres.js client`,
      run: fixture.copyProducts
    })
  }
  scenarios.push({
    name: 'products-export',
    group: 'export',
    server: 'app',
    fixed: true,
    description: `GET /external/v1/products/export read to its last line by one client: all ${thousands(fixture.products)} products, one snapshot; ratio: the floor's time ÷ its time`,
    ...(fixture.copyProducts ? { baseline: 'products-export-floor' } : {}),
    run: fixture.readProducts
  })
  if (fixture.orders) {
    const { count, read, copy } = fixture.orders
    scenarios.push({
      name: 'orders-export-floor',
      group: 'export',
      server: 'raw',
      fixed: true,
      description: `floor: COPY (the bench key's ${thousands(count)} orders with their items as JSON built by PostgreSQL, newest first) TO STDOUT, read by one postgres.js client`,
      run: copy
    }, {
      name: 'orders-export',
      group: 'export',
      server: 'app',
      fixed: true,
      description: `GET /external/v1/orders/export read to its last line by one client: the bench key's ${thousands(count)} orders with their items; ratio: the floor's time ÷ its time`,
      baseline: 'orders-export-floor',
      run: read
    })
  }
  return scenarios
}

/** Names `--only` takes besides the scenarios' own: whole groups. */
export const SCENARIO_GROUPS: Record<string, ScenarioGroup[]> = {
  catalogue: ['catalogue'],
  catalog: ['catalogue'],
  orders: ['order-reads', 'order-create'],
  'order-reads': ['order-reads'],
  'order-create': ['order-create'],
  feed: ['feed'],
  changes: ['feed'],
  export: ['export'],
  exports: ['export']
}

/** "List Filtered", "list filtered" and "list_filtered" all name list-filtered. */
export const scenarioKey = (name: string) => name.trim().toLowerCase().replace(/[\s_]+/g, '-')

export type ScenarioInfo = Pick<Scenario, 'name' | 'group' | 'baseline' | 'ceilings'>

/** Every scenario's name, group and ceiling, known before the fixtures are (the database is filled after the choice). */
export const SCENARIOS: ScenarioInfo[] = [
  { name: 'db-product', group: 'catalogue' },
  { name: 'db-list', group: 'catalogue' },
  { name: 'bare-product', group: 'catalogue' },
  { name: 'product', group: 'catalogue', baseline: 'bare-product', ceilings: ['db-product'] },
  { name: 'bare-list', group: 'catalogue' },
  { name: 'list', group: 'catalogue', baseline: 'bare-list', ceilings: ['db-list'] },
  { name: 'list-filtered', group: 'catalogue', baseline: 'bare-list', ceilings: ['db-list'] },
  { name: 'search', group: 'catalogue', baseline: 'bare-list', ceilings: ['db-list'] },
  { name: 'crawl-cursor', group: 'catalogue' },
  { name: 'bare-orders', group: 'order-reads' },
  { name: 'orders-page-1', group: 'order-reads', baseline: 'bare-orders' },
  { name: 'orders-deep', group: 'order-reads', baseline: 'bare-orders' },
  { name: 'orders-number', group: 'order-reads', baseline: 'bare-orders' },
  { name: 'orders-name', group: 'order-reads', baseline: 'bare-orders' },
  { name: 'feed-read', group: 'feed' },
  { name: 'feed-read-500', group: 'feed' },
  { name: 'feed-sequential', group: 'feed' },
  { name: 'order-create-raw-nofeed', group: 'order-create' },
  { name: 'order-create-raw', group: 'order-create', baseline: 'order-create-raw-nofeed' },
  { name: 'order-create-min', group: 'order-create' },
  { name: 'order-create', group: 'order-create', baseline: 'order-create-raw', ceilings: ['order-create-min'] },
  { name: 'order-create-webhooks', group: 'order-create', baseline: 'order-create' },
  { name: 'hold-then-order', group: 'order-create', baseline: 'order-create' },
  { name: 'products-export-floor', group: 'export' },
  { name: 'products-export', group: 'export', baseline: 'products-export-floor' },
  { name: 'orders-export-floor', group: 'export' },
  { name: 'orders-export', group: 'export', baseline: 'orders-export-floor' }
]

/**
 * The names of the scenarios `--only` asks for (comma-separated scenario or group names;
 * absent: all), with the ceilings they are compared with. Unknown names throw with the
 * list of known ones.
 */
export function selectScenarios (all: readonly ScenarioInfo[], only: string | undefined): Set<string> {
  if (only === undefined || only.trim() === '') return new Set(all.map((s) => s.name))
  const wanted = new Set<string>()
  const unknown: string[] = []
  for (const raw of only.split(',')) {
    const key = scenarioKey(raw)
    if (key === '') continue
    const groups = SCENARIO_GROUPS[key]
    const matched = all.filter((s) => s.name === key || (groups?.includes(s.group) ?? false))
    if (matched.length === 0 && !groups) unknown.push(raw.trim())
    for (const s of matched) wanted.add(s.name)
  }
  if (unknown.length > 0) {
    throw new Error(`--only: unknown ${unknown.map((u) => `"${u}"`).join(', ')}; scenarios: ${all.map((s) => s.name).join(', ')}; groups: ${Object.keys(SCENARIO_GROUPS).join(', ')}`)
  }
  // Ceilings of ceilings too (order-create-webhooks → order-create → order-create-raw → order-create-raw-nofeed).
  for (let size = -1; size !== wanted.size;) {
    size = wanted.size
    for (const s of all) {
      if (!wanted.has(s.name)) continue
      for (const ceiling of [...(s.baseline ? [s.baseline] : []), ...(s.ceilings ?? [])]) wanted.add(ceiling)
    }
  }
  return wanted
}
