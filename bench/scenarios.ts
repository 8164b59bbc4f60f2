// What the benchmark loads. Each scenario names the server it targets and builds its next
// request (autocannon sends it), or runs its own driver (the raw-SQL order transaction);
// an app scenario may name the baseline it is compared with: the bare server's scenario,
// or the raw SQL for order creation. Names are lower-case words joined by hyphens, so
// `--only` takes them as typed (see selectScenarios).
import type { LoadResult, RequestSpec } from './load.ts'

export type ScenarioGroup = 'catalogue' | 'order-reads' | 'order-create'

export interface Scenario {
  name: string
  group: ScenarioGroup
  /** raw: no HTTP server, the scenario's own `run` drives the database. */
  server: 'app' | 'bare' | 'raw'
  description: string
  /** The scenario whose rate this one's is divided by (run whenever this one is). */
  baseline?: string
  /** Instead of --connections: 1 measures a request's own latency, without queueing. */
  connections?: number
  /** After the run, a short one from a single connection: the latency without queueing. */
  oneConnection?: boolean
  /** No warm-up: the run itself must meet a cold read cache. */
  cold?: boolean
  /** The next request (app and bare scenarios). */
  next?: () => RequestSpec
  /** A run of the given length (raw scenarios). */
  run?: (durationSeconds: number) => Promise<LoadResult>
}

export interface CatalogueFixture {
  /** Every product id, in a shuffled order. */
  productIds: string[]
  /** The ids the bare server holds. */
  bareIds: string[]
  pages: number[]
  lastPage: number
  /** Terms matching a few products each. */
  searchTerms: string[]
}

/** The app's read cache holds this many entries (lib/read-cache.ts), oldest out first. */
const READ_CACHE_ENTRIES = 5000

/** Endless rotation over a list. */
export function rotate<T> (list: readonly T[]): () => T {
  let i = 0
  return () => list[i++ % list.length]!
}

/**
 * The terms with their letters' case varied: every variant finds the same products, yet
 * each is an entry of its own in the app's read cache (5,000 entries), so with enough
 * variants every search reaches the database.
 */
export function caseVariants (terms: readonly string[], max = 50_000): () => string {
  let n = 0
  return () => {
    const term = terms[n % terms.length]!
    const bits = Math.floor(n / terms.length)
    n = (n + 1) % max
    let bit = 0
    return [...term.toLowerCase()].map((c) => (c.toUpperCase() !== c && (bits >> bit++) & 1 ? c.toUpperCase() : c)).join('')
  }
}

export function catalogueScenarios (fixture: CatalogueFixture): Scenario[] {
  const product = rotate(fixture.productIds)
  const hot = rotate(fixture.productIds.slice(0, 100))
  const bareProduct = rotate(fixture.bareIds)
  const page = rotate(fixture.pages)
  const everyPage = rotate(Array.from({ length: fixture.lastPage }, (_, i) => i + 1))
  const term = caseVariants(fixture.searchTerms)
  return [
    {
      name: 'product',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products/{id}, rotating over all ${fixture.productIds.length} ids (${fixture.productIds.length > READ_CACHE_ENTRIES ? 'mostly read-cache misses' : 'read-cache hits after the first pass'})`,
      baseline: 'bare-product',
      next: () => ({ path: `/external/v1/products/${product()}` })
    },
    {
      name: 'product-hot',
      group: 'catalogue',
      server: 'app',
      description: 'GET /external/v1/products/{id}, rotating over 100 ids (read-cache hits)',
      baseline: 'bare-product',
      next: () => ({ path: `/external/v1/products/${hot()}` })
    },
    {
      name: 'bare-product',
      group: 'catalogue',
      server: 'bare',
      description: `GET /products/{id} from memory, rotating over ${fixture.bareIds.length} of the same products`,
      next: () => ({ path: `/products/${bareProduct()}` })
    },
    {
      name: 'list',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?page=N, N in ${fixture.pages.join(', ')} (read-cache hits after the first pass)`,
      baseline: 'bare-list',
      next: () => ({ path: `/external/v1/products?page=${page()}` })
    },
    {
      name: 'list-crawl',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?page=N, N = 1…${fixture.lastPage} in turn, as a client syncing the catalogue, no warm-up (a read-cache miss per page on the first pass)`,
      baseline: 'bare-list',
      cold: true,
      next: () => ({ path: `/external/v1/products?page=${everyPage()}` })
    },
    {
      name: 'bare-list',
      group: 'catalogue',
      server: 'bare',
      description: 'GET /products from memory: the same 25-product page 1',
      next: () => ({ path: '/products' })
    },
    {
      name: 'search',
      group: 'catalogue',
      server: 'app',
      description: `GET /external/v1/products?query=… over ${fixture.searchTerms.length} terms such as "${fixture.searchTerms[0]}", case varied so that every request reaches the database`,
      next: () => ({ path: `/external/v1/products?query=${encodeURIComponent(term())}` })
    },
    {
      name: 'search-1-conn',
      group: 'catalogue',
      server: 'app',
      description: 'the same searches from a single connection: the latency of one search, without queueing',
      connections: 1,
      next: () => ({ path: `/external/v1/products?query=${encodeURIComponent(term())}` })
    }
  ]
}

export interface OrderCreateFixture {
  /** The next create-order body (JSON). */
  body: () => string
  /** Lines in the pool, and how many take tracked stock. */
  lines: number
  trackedLines: number
  /** The raw-SQL run of the same transaction; absent without PostgreSQL. */
  raw?: { tool: string, run: (durationSeconds: number) => Promise<LoadResult> }
}

export function orderCreateScenarios (fixture: OrderCreateFixture): Scenario[] {
  const scenarios: Scenario[] = [{
    name: 'order-create',
    group: 'order-create',
    server: 'app',
    description: `POST /external/v1/orders, 1–3 lines of 1–2 units from ${fixture.lines} products and combinations (${fixture.trackedLines > 0 ? `${fixture.trackedLines} with tracked stock, raised very large, the rest untracked` : 'untracked stock'})`,
    ...(fixture.raw ? { baseline: 'order-create-raw' } : {}),
    next: () => ({ method: 'POST', path: '/external/v1/orders', body: fixture.body(), headers: { 'content-type': 'application/json' } })
  }]
  if (fixture.raw) {
    scenarios.push({
      name: 'order-create-raw',
      group: 'order-create',
      server: 'raw',
      description: `the same transaction in raw SQL (${fixture.raw.tool}, one connection a client): conditional stock decrements, order row with nextval, item rows, order_counts upsert`,
      run: fixture.raw.run
    })
  }
  return scenarios
}

export interface OrderReadFixture {
  /** The bench key's orders, and its list's last page. */
  orders: number
  lastPage: number
  deepPage: number
  /** Order numbers of the bench key's orders, in a shuffled order. */
  orderNumbers: number[]
  /** Order-number prefixes and customer-name fragments, with how many of the key's orders each matches. */
  numberPrefixes: Array<{ term: string, matches: number }>
  nameFragments: Array<{ term: string, matches: number }>
}

const range = (terms: Array<{ matches: number }>) => {
  const counts = terms.map((t) => t.matches)
  return `${Math.min(...counts).toLocaleString('en-US')}–${Math.max(...counts).toLocaleString('en-US')}`
}

export function orderReadScenarios (fixture: OrderReadFixture): Scenario[] {
  const number = rotate(fixture.orderNumbers)
  const prefix = rotate(fixture.numberPrefixes.map((t) => t.term))
  const fragment = rotate(fixture.nameFragments.map((t) => t.term))
  const orders = fixture.orders.toLocaleString('en-US')
  const list = (name: string, description: string, path: () => string): Scenario => ({ name, group: 'order-reads', server: 'app', description, oneConnection: true, next: () => ({ path: path() }) })
  return [
    list('orders-page-1', `GET /external/v1/orders, the newest 25 of the key's ${orders} orders`, () => '/external/v1/orders'),
    list('orders-page-2', 'GET /external/v1/orders?page=2', () => '/external/v1/orders?page=2'),
    list('orders-deep', `GET /external/v1/orders?page=${fixture.deepPage} (offset ${((fixture.deepPage - 1) * 25).toLocaleString('en-US')}; the last page is ${fixture.lastPage.toLocaleString('en-US')})`, () => `/external/v1/orders?page=${fixture.deepPage}`),
    list('orders-number', `GET /external/v1/orders?query=<order-number prefix>, ${fixture.numberPrefixes.length} prefixes such as "${fixture.numberPrefixes[0]?.term}" matching ${range(fixture.numberPrefixes)} orders each`,
      () => `/external/v1/orders?query=${prefix()}`),
    list('orders-name', `GET /external/v1/orders?query=<customer-name fragment>, ${fixture.nameFragments.length} fragments such as "${fixture.nameFragments[0]?.term}" matching ${range(fixture.nameFragments)} orders each`,
      () => `/external/v1/orders?query=${encodeURIComponent(fragment())}`),
    list('order-by-number', `GET /external/v1/orders/{orderNumber}, rotating over ${fixture.orderNumbers.length.toLocaleString('en-US')} of the key's order numbers (with items)`,
      () => `/external/v1/orders/${number()}`)
  ]
}

/** Names `--only` takes besides the scenarios' own: whole groups. */
export const SCENARIO_GROUPS: Record<string, ScenarioGroup[]> = {
  catalogue: ['catalogue'],
  catalog: ['catalogue'],
  orders: ['order-reads', 'order-create'],
  'order-reads': ['order-reads'],
  'order-create': ['order-create']
}

/** "Product Hot", "product hot" and "product_hot" all name product-hot. */
export const scenarioKey = (name: string) => name.trim().toLowerCase().replace(/[\s_]+/g, '-')

export type ScenarioInfo = Pick<Scenario, 'name' | 'group' | 'baseline'>

/** The order scenarios' names, known before their fixtures are (the orders are filled before the app starts). */
export const ORDER_SCENARIOS: ScenarioInfo[] = [
  { name: 'orders-page-1', group: 'order-reads' },
  { name: 'orders-page-2', group: 'order-reads' },
  { name: 'orders-deep', group: 'order-reads' },
  { name: 'orders-number', group: 'order-reads' },
  { name: 'orders-name', group: 'order-reads' },
  { name: 'order-by-number', group: 'order-reads' },
  { name: 'order-create', group: 'order-create', baseline: 'order-create-raw' },
  { name: 'order-create-raw', group: 'order-create' }
]

/**
 * The names of the scenarios `--only` asks for (comma-separated scenario or group names;
 * absent: all), with the baselines they are compared with. Unknown names throw with the
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
  for (const s of all) if (wanted.has(s.name) && s.baseline) wanted.add(s.baseline)
  return wanted
}
