// Orders for the benchmark: the lines orders are made of, the create-order bodies the app
// is sent, the same transaction in raw SQL (pgbench, or a postgres.js driver without it),
// and a bulk fill of the orders table (a million orders in a few SQL statements) for the
// list and lookup scenarios.
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import type { CatalogFile } from '../schemas/catalog-file.ts'
import { randomGenerator } from './catalog.ts'
import type { LoadResult } from './load.ts'
import { withBulkLoad } from './seed.ts'

/** One thing an order line can name: a product without combinations, or a combination. */
export interface OrderLineChoice {
  productId: string
  combinationId: string | null
  /** Stock is tracked (then the order takes it, and the benchmark makes it very large). */
  tracked: boolean
  name: string
  price: number
}

/** What the benchmark raises tracked stock to: orders never run out during a run. */
export const LARGE_STOCK = 1_000_000_000
/** The app's order_counts shards (db/schema.ts ORDER_COUNT_SHARDS). */
const COUNT_SHARDS = 16
export const ORDER_PHONE = '+14155550123'

/**
 * Up to `count` sellable lines, a seeded random pick of the catalogue: about a fifth
 * combinations, the rest products without combinations; tracked stock only when
 * `tracked` (the caller then raises it to LARGE_STOCK), otherwise untracked only.
 */
export function chooseOrderLines (catalog: CatalogFile, options: { count: number, seed: number, tracked: boolean }): OrderLineChoice[] {
  const random = randomGenerator(options.seed + 7)
  const products: OrderLineChoice[] = []
  const combinations: OrderLineChoice[] = []
  for (const p of catalog.products ?? []) {
    if (!p.isAvailable) continue
    if (p.combinations?.length) {
      for (const c of p.combinations) {
        const tracked = c.quantity !== null && c.quantity !== undefined
        if (c.isAvailable && (options.tracked || !tracked)) combinations.push({ productId: p.id, combinationId: c.id, tracked, name: p.name, price: c.price })
      }
    } else {
      const tracked = p.quantity !== null && p.quantity !== undefined
      if (options.tracked || !tracked) products.push({ productId: p.id, combinationId: null, tracked, name: p.name, price: p.price })
    }
  }
  const pick = (list: OrderLineChoice[], n: number) => {
    const copy = [...list]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
    }
    return copy.slice(0, n)
  }
  const wantCombinations = Math.min(combinations.length, Math.round(options.count / 5))
  return [...pick(products, options.count - wantCombinations), ...pick(combinations, wantCombinations)]
}

/** Create-order bodies: 1–3 distinct lines of the pool, 1–2 units each, a varied customer name. */
export function orderBodies (lines: readonly OrderLineChoice[], seed: number): () => string {
  const random = randomGenerator(seed + 11)
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1))
  let n = 0
  return () => {
    const count = Math.min(int(1, 3), lines.length)
    const chosen = new Set<number>()
    while (chosen.size < count) chosen.add(int(0, lines.length - 1))
    const items = [...chosen].map((i) => {
      const line = lines[i]!
      return { productId: line.productId, ...(line.combinationId ? { combinationId: line.combinationId } : {}), quantity: int(1, 2) }
    })
    return JSON.stringify({ customerName: `Bench Customer ${++n}`, customerPhone: ORDER_PHONE, items })
  }
}

/**
 * The pool of lines as a table, `bench_order_lines(i, …)`, numbered so that a line's
 * number says which stock it takes: 1…trackedProducts products, after untrackedEnd
 * combinations, between the two none. pgbench picks lines by number; the bulk fill too.
 */
export interface LineTable { lines: number, trackedProducts: number, untrackedEnd: number }

export async function createLineTable (sql: postgres.Sql, lines: readonly OrderLineChoice[]): Promise<LineTable> {
  const trackedProducts = lines.filter((l) => l.tracked && !l.combinationId)
  const untracked = lines.filter((l) => !l.tracked)
  const trackedCombinations = lines.filter((l) => l.tracked && l.combinationId)
  const ordered = [...trackedProducts, ...untracked, ...trackedCombinations]
  await sql`drop table if exists bench_order_lines`
  await sql`create table bench_order_lines (i int primary key, product_id uuid not null, combination_id uuid, name text not null, price numeric(12,2) not null)`
  const rows = ordered.map((l, i) => ({ i: i + 1, product_id: l.productId, combination_id: l.combinationId, name: l.name, price: l.price.toFixed(2) }))
  for (let i = 0; i < rows.length; i += 1000) await sql`insert into bench_order_lines ${sql(rows.slice(i, i + 1000))}`
  await sql`analyze bench_order_lines`
  return { lines: ordered.length, trackedProducts: trackedProducts.length, untrackedEnd: trackedProducts.length + untracked.length }
}

/** Raises the tracked stock of the pool's lines to LARGE_STOCK. */
export async function raiseStock (sql: postgres.Sql, lines: readonly OrderLineChoice[]): Promise<void> {
  const products = lines.filter((l) => l.tracked && !l.combinationId).map((l) => l.productId)
  const combinations = lines.filter((l) => l.tracked && l.combinationId).map((l) => l.combinationId!)
  if (products.length) await sql`update products set quantity = ${LARGE_STOCK} where id = any(${products}::uuid[])`
  if (combinations.length) await sql`update combinations set quantity = ${LARGE_STOCK} where id = any(${combinations}::uuid[])`
}

const ORDER_COLUMNS = 'id, order_number, api_key_id, status, total, delivery_fee, final_total, products_count, customer_name, customer_phone, note, address, created_at, updated_at'

/**
 * When order-create-raw and order-create-raw-nofeed are measured together (run.ts), the
 * same clients alternate between them in slices of the wall clock: A B B A A B B A …, A
 * without the change-log write, B with it, each slice ALTERNATE_SLICE_MS long. Both then
 * see the same machine, whose load moves from second to second, and the same connections.
 */
export const ALTERNATE_SLICE_MS = 1000
/** Whether an order placed at `epochMs` writes its change events when the two alternate. */
export function feedPhase (epochMs: number): boolean {
  const slot = Math.floor(epochMs / ALTERNATE_SLICE_MS) % 4
  return slot === 1 || slot === 2
}
/** feedPhase in SQL, at the statement's own instant. */
const FEED_PHASE_SQL = `floor(extract(epoch from clock_timestamp()) * 1000 / ${ALTERNATE_SLICE_MS})::bigint % 4 in (1, 2)`

/** Milliseconds of [fromMs, toMs) (epoch) that fall in feed slices and in the others. */
export function phaseExposure (fromMs: number, toMs: number): { feed: number, nofeed: number } {
  const exposure = { feed: 0, nofeed: 0 }
  for (let t = fromMs; t < toMs;) {
    const end = Math.min(toMs, (Math.floor(t / ALTERNATE_SLICE_MS) + 1) * ALTERNATE_SLICE_MS)
    exposure[feedPhase(t) ? 'feed' : 'nofeed'] += end - t
    t = end
  }
  return exposure
}

/**
 * The SQL of the app's change-log writes (db/events.ts insertEvents, which the app folds into
 * the products' refresh and the order's insert): the order's `order.created` and a
 * `product.updated` for each product whose tracked stock the order took, here in one INSERT.
 * `chosen` names the order's lines (with l.i, b.product_id), `tracked` the condition that a
 * line's stock is tracked.
 */
const eventInsert = (orderId: string, orderNumber: string, apiKeyId: string, chosen: string, tracked: string) => [
  'INSERT INTO change_events (type, resource_id, api_key_id, data)',
  `  SELECT 'order.created', ${orderId}::uuid, '${apiKeyId}'::uuid, ('{"orderNumber":"' || ${orderNumber} || '","status":"pending"}')::jsonb`,
  `  UNION ALL SELECT DISTINCT 'product.updated', b.product_id, NULL::uuid, '{}'::jsonb FROM ${chosen} AND ${tracked};`
]

/**
 * db/stock.ts refreshProducts: after stock was taken, each product's availability,
 * updated_at and content hash (`ids` selects the products).
 */
const refreshProducts = (ids: string) => [
  'UPDATE products p SET updated_at = now(), content_hash = NULL,',
  '  available = p.is_available AND CASE',
  '    WHEN EXISTS (SELECT 1 FROM combinations c WHERE c.product_id = p.id)',
  '      THEN EXISTS (SELECT 1 FROM combinations c WHERE c.product_id = p.id AND c.is_available AND (c.quantity IS NULL OR c.quantity > 0))',
  '    ELSE p.quantity IS NULL OR p.quantity > 0 END',
  `  WHERE p.id IN (${ids});`
]

/**
 * The app's create-order transaction as a pgbench script: the lines' products locked (as the
 * app locks them first, in id order), 1–3 lines taken in line-number order, each with the
 * conditional decrement when its stock is tracked, the products' state
 * refreshed when stock was taken, the order row with nextval('order_number_seq'), the item
 * rows, the order_counts upsert and, with `feed` (as the app does), the change-log INSERT.
 * Without `feed` it measures what the events cost; `alternate`: with it in feed slices only
 * (see feedPhase), decided at the order's INSERT.
 */
export function pgbenchScript (table: LineTable, apiKeyId: string, options: { feed: boolean | 'alternate' } = { feed: true }): string {
  const { lines, trackedProducts, untrackedEnd } = table
  const stock = (v: string, q: string) => [
    `\\if :${v} <= ${trackedProducts}`,
    `UPDATE products SET quantity = quantity - :${q} WHERE id = (SELECT product_id FROM bench_order_lines WHERE i = :${v}) AND quantity >= :${q};`,
    `\\elif :${v} > ${untrackedEnd}`,
    `UPDATE combinations SET quantity = quantity - :${q} WHERE id = (SELECT combination_id FROM bench_order_lines WHERE i = :${v}) AND quantity >= :${q};`,
    '\\endif'
  ]
  const chosen = '(VALUES (0, :x::int, :qx::int), (1, :y::int, :qy::int), (2, :z::int, :qz::int)) AS l(line, i, q) JOIN bench_order_lines b ON b.i = l.i WHERE l.line < :n'
  const trackedLine = (v: string) => `(:${v} <= ${trackedProducts} or :${v} > ${untrackedEnd})`
  const tracked = `(l.i <= ${trackedProducts} OR l.i > ${untrackedEnd})`
  return [
    '\\set n random(1, 3)',
    `\\set a random(1, ${lines})`,
    `\\set b random(1, ${lines})`,
    `\\set c random(1, ${lines})`,
    '\\set x case when :n = 1 then :a when :n = 2 then least(:a, :b) else least(:a, :b, :c) end',
    '\\set y case when :n = 2 then greatest(:a, :b) else :a + :b + :c - least(:a, :b, :c) - greatest(:a, :b, :c) end',
    '\\set z greatest(:a, :b, :c)',
    '\\set qx random(1, 2)',
    '\\set qy random(1, 2)',
    '\\set qz random(1, 2)',
    `\\set shard random(0, ${COUNT_SHARDS - 1})`,
    '\\set customer random(1, 1000000)',
    `\\set tracked ${trackedLine('x')} or (:n >= 2 and ${trackedLine('y')}) or (:n >= 3 and ${trackedLine('z')})`,
    'BEGIN;',
    `SELECT 1 FROM products WHERE id IN (SELECT b.product_id FROM ${chosen}) ORDER BY id FOR NO KEY UPDATE;`,
    ...stock('x', 'qx'),
    '\\if :n >= 2',
    ...stock('y', 'qy'),
    '\\endif',
    '\\if :n >= 3',
    ...stock('z', 'qz'),
    '\\endif',
    '\\if :tracked',
    ...refreshProducts(`SELECT b.product_id FROM ${chosen} AND ${tracked}`),
    '\\endif',
    `INSERT INTO orders (${ORDER_COLUMNS})`,
    `  SELECT gen_random_uuid(), nextval('order_number_seq'), '${apiKeyId}', 'pending', s.total, 0, s.total, s.count, 'Bench Customer ' || :customer, '${ORDER_PHONE}', NULL, NULL, now(), now()`,
    `  FROM (SELECT sum(b.price * l.q) AS total, sum(l.q)::int AS count FROM ${chosen}) s`,
    `  RETURNING id AS order_id, order_number${options.feed === 'alternate' ? `, CASE WHEN ${FEED_PHASE_SQL} THEN 1 ELSE 0 END AS feed` : ''} \\gset`,
    'INSERT INTO order_items (order_id, line, product_id, combination_id, name, quantity, single_price, total_price)',
    `  SELECT :order_id::uuid, l.line, b.product_id, b.combination_id, b.name, l.q, b.price, b.price * l.q FROM ${chosen};`,
    `INSERT INTO order_counts (api_key_id, shard, count) VALUES ('${apiKeyId}', :shard, 1)`,
    '  ON CONFLICT (api_key_id, shard) DO UPDATE SET count = order_counts.count + 1;',
    ...(options.feed === true ? eventInsert(':order_id', ':order_number', apiKeyId, chosen, tracked) : []),
    ...(options.feed === 'alternate' ? ['\\if :feed', ...eventInsert(':order_id', ':order_number', apiKeyId, chosen, tracked), '\\endif'] : []),
    'COMMIT;',
    ''
  ].join('\n')
}

/**
 * The least an order's transaction must do, as a pgbench script (order-create-min): two
 * conditional stock decrements of two distinct tracked products (in line-number order),
 * the order row with nextval('order_number_seq'), and its two item rows in one INSERT.
 * No state refresh, no count, no events, no idempotency: the floor the app's orders are
 * compared with, beside order-create-raw (the app's whole transaction in raw SQL).
 */
export function pgbenchMinimalScript (table: LineTable, apiKeyId: string): string {
  if (table.trackedProducts < 2) throw new Error('order-create-min needs two tracked products in the line pool')
  const line = (v: string) => `(SELECT product_id FROM bench_order_lines WHERE i = :${v})`
  const both = '(VALUES (0, :x::int, :qx::int), (1, :y::int, :qy::int)) AS l(line, i, q) JOIN bench_order_lines b ON b.i = l.i'
  return [
    `\\set a random(1, ${table.trackedProducts - 1})`,
    `\\set y random(:a + 1, ${table.trackedProducts})`,
    '\\set x :a',
    '\\set qx random(1, 2)',
    '\\set qy random(1, 2)',
    '\\set customer random(1, 1000000)',
    'BEGIN;',
    `UPDATE products SET quantity = quantity - :qx WHERE id = ${line('x')} AND quantity >= :qx;`,
    `UPDATE products SET quantity = quantity - :qy WHERE id = ${line('y')} AND quantity >= :qy;`,
    `INSERT INTO orders (${ORDER_COLUMNS})`,
    `  SELECT gen_random_uuid(), nextval('order_number_seq'), '${apiKeyId}', 'pending', s.total, 0, s.total, s.count, 'Bench Customer ' || :customer, '${ORDER_PHONE}', NULL, NULL, now(), now()`,
    `  FROM (SELECT sum(b.price * l.q) AS total, sum(l.q)::int AS count FROM ${both}) s`,
    '  RETURNING id AS order_id \\gset',
    'INSERT INTO order_items (order_id, line, product_id, combination_id, name, quantity, single_price, total_price)',
    `  SELECT :order_id::uuid, l.line, b.product_id, NULL, b.name, l.q, b.price, b.price * l.q FROM ${both};`,
    'COMMIT;',
    ''
  ].join('\n')
}

/** Sets a key's order count to its orders (the minimal ceiling's orders skip it). */
export async function recountOrders (sql: postgres.Sql, apiKeyId: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`delete from order_counts where api_key_id = ${apiKeyId}`
    await tx`insert into order_counts (api_key_id, shard, count) select ${apiKeyId}, 0, count(*) from orders where api_key_id = ${apiKeyId}`
  })
}

export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

const round2 = (n: number) => Math.round(n * 100) / 100

/**
 * Runs the script with pgbench: `connections` clients on 2 threads for the duration,
 * prepared statements, each transaction's latency logged (-l) for the percentiles; the
 * rate is over the transactions' own window (see transactionWindow).
 */
export async function runPgbench (options: { url: string, script: string, connections: number, durationSeconds: number }): Promise<LoadResult & { tool: string }> {
  const run = await pgbench(options)
  const latencies = run.transactions.map((t) => t.latencyMs).sort((a, b) => a - b)
  const seconds = transactionSpan(run.transactions) / 1000 || options.durationSeconds
  return {
    tool: run.tool,
    requestsPerSecond: run.processed / seconds,
    // pgbench counts failed transactions apart from the processed ones.
    okPerSecond: run.processed / seconds,
    p50: round2(percentile(latencies, 50)),
    p99: round2(percentile(latencies, 99)),
    total: run.processed,
    non2xx: 0,
    errors: run.errors,
    latencies
  }
}

/**
 * The script in `alternate` mode (see feedPhase) for twice the duration: the figures of the
 * orders without the change-log write and of those with it. Each one's rate is its orders
 * (counted in the database: an order with its order.created event was a feed order) over
 * the time its slices took; latencies are told apart by the slice a transaction began in
 * (the script decides at the order's INSERT, so a few at the edges of slices count on the
 * wrong side). Errors count on the feed side.
 */
export async function runPgbenchPair (options: { url: string, script: string, connections: number, durationSeconds: number }): Promise<[LoadResult, LoadResult]> {
  const sql = postgres(options.url, { max: 1, onnotice: () => {} })
  try {
    const [before] = await sql<Array<{ n: string, seq: string }>>`
      select coalesce((select max(order_number) from orders), 0)::text as n, coalesce((select max(seq) from change_events), 0)::text as seq`
    const run = await pgbench({ ...options, durationSeconds: 2 * options.durationSeconds })
    const [counts] = await sql<Array<{ orders: number, feed: number }>>`
      select count(*)::int as orders, count(e.resource_id)::int as feed
      from orders o left join (select resource_id from change_events where seq > ${before!.seq}::bigint and type = 'order.created') e on e.resource_id = o.id
      where o.order_number > ${before!.n}::bigint`
    const { startMs, endMs } = transactionWindow(run.transactions)
    const exposure = phaseExposure(startMs, endMs)
    const side = (feed: boolean, orders: number, errors: number): LoadResult => {
      const latencies = run.transactions.filter((t) => feedPhase(t.endMs - t.latencyMs) === feed).map((t) => t.latencyMs).sort((a, b) => a - b)
      const seconds = (feed ? exposure.feed : exposure.nofeed) / 1000
      return {
        requestsPerSecond: orders / seconds,
        okPerSecond: orders / seconds,
        p50: round2(percentile(latencies, 50)),
        p99: round2(percentile(latencies, 99)),
        total: orders,
        non2xx: 0,
        errors,
        latencies
      }
    }
    return [side(false, counts!.orders - counts!.feed, 0), side(true, counts!.feed, run.errors)]
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/**
 * From the first transaction's start to the last one's end. pgbench's -T clock includes
 * connecting its clients (1.5 s of a 5-s run on this machine at 32 clients), which is not
 * the transaction's throughput: rates are taken over this window instead, as pgbench's own
 * "tps (without initial connection time)" does.
 */
function transactionWindow (transactions: ReadonlyArray<{ endMs: number, latencyMs: number }>): { startMs: number, endMs: number } {
  let startMs = Infinity
  let endMs = -Infinity
  for (const t of transactions) {
    startMs = Math.min(startMs, t.endMs - t.latencyMs)
    endMs = Math.max(endMs, t.endMs)
  }
  return transactions.length ? { startMs, endMs } : { startMs: 0, endMs: 0 }
}
const transactionSpan = (transactions: ReadonlyArray<{ endMs: number, latencyMs: number }>) => {
  const { startMs, endMs } = transactionWindow(transactions)
  return endMs - startMs
}

/** One pgbench run: every transaction's end (epoch ms) and latency from its log (-l). */
async function pgbench (options: { url: string, script: string, connections: number, durationSeconds: number }) {
  const dir = mkdtempSync(join(tmpdir(), 'storefront-bench-pgbench-'))
  try {
    const file = join(dir, 'order.sql')
    writeFileSync(file, options.script)
    const args = ['-n', '-M', 'prepared', '-c', String(options.connections), '-j', String(Math.min(2, options.connections)),
      '-T', String(options.durationSeconds), '-f', file, '-l', `--log-prefix=${join(dir, 'tx')}`, options.url]
    const { stdout, stderr } = await promisify(execFile)('pgbench', args, { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, PGAPPNAME: 'storefront-bench-pgbench' } })
      .catch((err: { stdout?: string, stderr?: string, message: string }) => {
        // A run with aborted clients exits non-zero; its figures are still printed.
        if (err.stdout?.includes('number of transactions actually processed')) return { stdout: err.stdout, stderr: err.stderr ?? '' }
        throw new Error(`pgbench failed: ${err.stderr || err.message}`)
      })
    const processed = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1] ?? NaN)
    const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0)
    const aborted = (stderr.match(/client \d+ (script \d+ )?aborted/g) ?? []).length
    // client_id transaction_no latency_us script_no epoch_s us_in_second: the transaction ended at epoch_s + us.
    const transactions: Array<{ endMs: number, latencyMs: number }> = []
    for (const name of readdirSync(dir).filter((f) => f.startsWith('tx'))) {
      for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
        const fields = line.split(' ')
        const [micros, epoch, us] = [Number(fields[2]), Number(fields[4]), Number(fields[5])]
        if (Number.isFinite(micros) && Number.isFinite(epoch) && Number.isFinite(us)) transactions.push({ endMs: epoch * 1000 + us / 1000, latencyMs: micros / 1000 })
      }
    }
    if (aborted > 0) process.stdout.write(`pgbench: ${aborted} clients aborted, first error: ${/ERROR:.*$/m.exec(stderr)?.[0] ?? stderr.split('\n')[0]}\n`)
    return {
      tool: `pgbench ${/\d+(\.\d+)?/.exec((await promisify(execFile)('pgbench', ['--version'])).stdout)?.[0] ?? ''}`.trim(),
      processed,
      errors: failed + aborted,
      transactions
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

interface RawNodeOptions { url: string, lines: readonly OrderLineChoice[], apiKeyId: string, connections: number, durationSeconds: number, seed: number }

/** The same transaction from Node with postgres.js: `connections` clients, each running orders back to back (`feed`: with the change-log write). */
export async function runRawNode (options: RawNodeOptions & { feed: boolean }): Promise<LoadResult & { tool: string }> {
  const run = await rawNode(options)
  const latencies = run.latencies[options.feed ? 'feed' : 'nofeed'].sort((a, b) => a - b)
  return {
    tool: 'postgres.js',
    requestsPerSecond: latencies.length / options.durationSeconds,
    okPerSecond: latencies.length / options.durationSeconds,
    p50: round2(percentile(latencies, 50)),
    p99: round2(percentile(latencies, 99)),
    total: latencies.length,
    non2xx: 0,
    errors: run.errors,
    latencies
  }
}

/** runRawNode alternating (see feedPhase) for twice the duration: the figures without the change-log write and with it (errors on the feed side). */
export async function runRawNodePair (options: RawNodeOptions): Promise<[LoadResult, LoadResult]> {
  const run = await rawNode({ ...options, durationSeconds: 2 * options.durationSeconds, feed: 'alternate' })
  const exposure = phaseExposure(run.startedMs, run.endedMs)
  const side = (feed: boolean): LoadResult => {
    const latencies = run.latencies[feed ? 'feed' : 'nofeed'].sort((a, b) => a - b)
    const seconds = (feed ? exposure.feed : exposure.nofeed) / 1000
    return {
      requestsPerSecond: latencies.length / seconds,
      okPerSecond: latencies.length / seconds,
      p50: round2(percentile(latencies, 50)),
      p99: round2(percentile(latencies, 99)),
      total: latencies.length,
      non2xx: 0,
      errors: feed ? run.errors : 0,
      latencies
    }
  }
  return [side(false), side(true)]
}

async function rawNode (options: RawNodeOptions & { feed: boolean | 'alternate' }) {
  const sql = postgres(options.url, { max: options.connections, onnotice: () => {}, connection: { application_name: 'storefront-bench-raw' } })
  const random = randomGenerator(options.seed + 13)
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1))
  const latencies = { feed: [] as number[], nofeed: [] as number[] }
  const startedMs = Date.now()
  let errors = 0
  let firstError: unknown
  let customer = 0
  const until = performance.now() + options.durationSeconds * 1000
  const client = async () => {
    while (performance.now() < until) {
      const picked = new Set<number>()
      const count = int(1, 3)
      while (picked.size < count) picked.add(int(0, options.lines.length - 1))
      const lines = [...picked].map((i) => ({ ...options.lines[i]!, q: int(1, 2) }))
      // Stock in id order, as the app takes it.
      const stocked = lines.filter((l) => l.tracked).sort((a, b) => ((a.combinationId ?? a.productId) < (b.combinationId ?? b.productId) ? -1 : 1))
      const started = performance.now()
      const feed = options.feed === 'alternate' ? feedPhase(Date.now()) : options.feed
      try {
        await sql.begin(async (tx) => {
          for (const l of stocked) {
            const rows = l.combinationId
              ? await tx`update combinations set quantity = quantity - ${l.q} where id = ${l.combinationId} and quantity >= ${l.q} returning id`
              : await tx`update products set quantity = quantity - ${l.q} where id = ${l.productId} and quantity >= ${l.q} returning id`
            if (rows.length === 0) throw new Error('out of stock')
          }
          const restocked = [...new Set(stocked.map((l) => l.productId))]
          if (restocked.length > 0) {
            await tx`update products p set updated_at = now(), content_hash = null,
              available = p.is_available and case
                when exists (select 1 from combinations c where c.product_id = p.id)
                  then exists (select 1 from combinations c where c.product_id = p.id and c.is_available and (c.quantity is null or c.quantity > 0))
                else p.quantity is null or p.quantity > 0 end
              where p.id in ${tx(restocked)}`
          }
          const cents = lines.reduce((sum, l) => sum + Math.round(l.price * 100) * l.q, 0)
          const total = (cents / 100).toFixed(2)
          const [order] = await tx<Array<{ id: string, order_number: string }>>`insert into orders (id, order_number, api_key_id, status, total, delivery_fee, final_total, products_count, customer_name, customer_phone, created_at, updated_at)
            values (gen_random_uuid(), nextval('order_number_seq'), ${options.apiKeyId}, 'pending', ${total}, 0, ${total}, ${lines.reduce((n, l) => n + l.q, 0)}, ${`Bench Customer ${++customer}`}, ${ORDER_PHONE}, now(), now())
            returning id, order_number::text`
          await tx`insert into order_items ${tx(lines.map((l, line) => ({
            order_id: order!.id,
line,
product_id: l.productId,
combination_id: l.combinationId,
name: l.name,
quantity: l.q,
            single_price: l.price.toFixed(2),
total_price: (Math.round(l.price * 100) * l.q / 100).toFixed(2)
          })))}`
          await tx`insert into order_counts (api_key_id, shard, count) values (${options.apiKeyId}, ${int(0, COUNT_SHARDS - 1)}, 1)
            on conflict (api_key_id, shard) do update set count = order_counts.count + 1`
          if (feed) {
            const events = [
              { type: 'order.created', resource_id: order!.id, api_key_id: options.apiKeyId, data: JSON.stringify({ orderNumber: order!.order_number, status: 'pending' }) },
              ...restocked.map((id) => ({ type: 'product.updated', resource_id: id, api_key_id: null, data: '{}' }))
            ]
            // One multi-row INSERT, as recordEvents writes it.
            await tx`insert into change_events ${tx(events)}`
          }
        })
        latencies[feed ? 'feed' : 'nofeed'].push(performance.now() - started)
      } catch (err) {
        errors++
        firstError ??= err
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: options.connections }, client))
  } finally {
    await sql.end({ timeout: 5 })
  }
  if (firstError) process.stdout.write(`raw driver: ${errors} failed transactions, first: ${String(firstError)}\n`)
  return { latencies, errors, startedMs, endedMs: Date.now() }
}

// Names for the bulk orders: ~50 first names × 1,000 surnames (40 stems × 25 endings).
const FIRST_NAMES = ['Ada', 'Alan', 'Amara', 'Ben', 'Carla', 'Chen', 'Dara', 'Diego', 'Elena', 'Emil', 'Fatima', 'Felix',
  'Grace', 'Hana', 'Hugo', 'Ines', 'Ivan', 'Jade', 'Jonas', 'Kai', 'Keiko', 'Lars', 'Leila', 'Luca', 'Maya', 'Mateo',
  'Nadia', 'Nils', 'Omar', 'Olga', 'Priya', 'Paolo', 'Quinn', 'Rosa', 'Ravi', 'Sara', 'Sven', 'Tara', 'Tomas', 'Uma',
  'Victor', 'Vera', 'Wen', 'Xavier', 'Yara', 'Yusuf', 'Zoe', 'Zoran']
const SURNAME_STEMS = ['Ash', 'Black', 'Bright', 'Brook', 'Cald', 'Clay', 'Corn', 'Dal', 'Dun', 'East', 'Fair', 'Farn',
  'Glen', 'Gold', 'Hal', 'Hart', 'Hazel', 'Hol', 'Kings', 'Lang', 'Lind', 'Marsh', 'Mor', 'Nor', 'Oak', 'Pem', 'Rad',
  'Red', 'Ros', 'Sal', 'Shel', 'Stan', 'Stock', 'Thorn', 'Wake', 'Wes', 'Whit', 'Wick', 'Win', 'Yar']
const SURNAME_ENDINGS = ['berg', 'bourne', 'bridge', 'brook', 'bury', 'by', 'combe', 'croft', 'dale', 'den', 'field', 'ford',
  'gate', 'ham', 'hurst', 'ington', 'ley', 'low', 'mere', 'more', 'shaw', 'stead', 'ton', 'well', 'wood']

export interface BulkOrders {
  /** The first bulk order's number; order g (0-based) has number firstNumber + g. */
  firstNumber: number
  count: number
  /** How many belong to the bench key (see isBenchOrder). */
  benchCount: number
  ms: number
}

/** Bulk order g belongs to the bench key when g % 10 < BENCH_TENTHS (60%), else to other key g % 10 − BENCH_TENTHS. */
const BENCH_TENTHS = 6
/** How many other keys the rest of the bulk orders are spread over (10% each). */
export const OTHER_KEYS = 10 - BENCH_TENTHS

/** Whether bulk order g belongs to the bench key. */
export const isBenchOrder = (g: number) => g % 10 < BENCH_TENTHS

/**
 * Fills the orders table with `count` orders and their 1–3 items (lines of
 * bench_order_lines), `chunk` orders a statement, in one transaction with the secondary
 * indexes built once at the end (seed.ts withBulkLoad): 60% for the bench key, 10% for each
 * of the OTHER_KEYS `otherKeyIds`; varied customers, statuses and totals; one order every
 * 20 s back from now, so the newest are the last. Then sets order_counts from the table,
 * moves the order-number sequence past them and runs VACUUM ANALYZE.
 */
export async function bulkInsertOrders (
  sql: postgres.Sql,
  options: { count: number, chunk: number, benchKeyId: string, otherKeyIds: string[], lines: number, onChunk?: (done: number) => void }
): Promise<BulkOrders> {
  if (options.otherKeyIds.length !== OTHER_KEYS) throw new Error(`bulkInsertOrders: ${OTHER_KEYS} other keys expected`)
  const started = performance.now()
  const [{ first } = { first: '0' }] = await sql<Array<{ first: string }>>`select nextval('order_number_seq')::text as first`
  const firstNumber = Number(first)
  await sql.begin(async (tx) => {
    await withBulkLoad(async (text) => [...await tx.unsafe(text)], ['orders', 'order_items'], async () => {
      for (let g0 = 0; g0 < options.count; g0 += options.chunk) {
        const g1 = Math.min(options.count, g0 + options.chunk) - 1
        await tx`
          with lines as materialized (
            select g, l, 1 + (g * 31 + l * 7) % ${options.lines} as i, 1 + (g + l) % 2 as q
            from generate_series(${g0}::bigint, ${g1}::bigint) g, generate_series(0, 2) l
            where l <= g % 3
          ), totals as (
            select lines.g, sum(b.price * lines.q) as total, sum(lines.q)::int as count
            from lines join bench_order_lines b on b.i = lines.i group by lines.g
          ), inserted as (
            insert into orders (${tx.unsafe(ORDER_COLUMNS)})
            select gen_random_uuid(), ${firstNumber} + t.g,
              case when t.g % 10 < ${BENCH_TENTHS} then ${options.benchKeyId}::uuid
                else (${options.otherKeyIds}::uuid[])[1 + t.g % 10 - ${BENCH_TENTHS}] end,
              (array['delivered', 'delivered', 'delivered', 'shipped', 'processing', 'confirmed', 'pending', 'cancelled'])[1 + abs(hashint8extended(t.g, 1) % 8)],
              t.total, 0, t.total, t.count,
              (${FIRST_NAMES}::text[])[1 + abs(hashint8extended(t.g, 2) % ${FIRST_NAMES.length})] || ' ' ||
                (${SURNAME_STEMS}::text[])[1 + abs(hashint8extended(t.g, 3) % ${SURNAME_STEMS.length})] ||
                (${SURNAME_ENDINGS}::text[])[1 + abs(hashint8extended(t.g, 4) % ${SURNAME_ENDINGS.length})],
              '+1' || (201 + abs(hashint8extended(t.g, 5) % 700))::text || lpad(abs(hashint8extended(t.g, 6) % 10000000)::text, 7, '0'),
              null, null,
              now() - (${options.count} - t.g) * interval '20 seconds', now() - (${options.count} - t.g) * interval '20 seconds'
            from totals t
            returning id, order_number
          )
          insert into order_items (order_id, line, product_id, combination_id, name, quantity, single_price, total_price)
          select o.id, lines.l, b.product_id, b.combination_id, b.name, lines.q, b.price, b.price * lines.q
          from inserted o join lines on lines.g = o.order_number - ${firstNumber} join bench_order_lines b on b.i = lines.i`
        options.onChunk?.(g1 + 1)
      }
    })
  })
  await sql`select setval('order_number_seq', ${firstNumber + options.count - 1})`
  await sql`delete from order_counts`
  await sql`insert into order_counts (api_key_id, shard, count) select api_key_id, 0, count(*) from orders group by api_key_id`
  await sql.unsafe('vacuum analyze orders')
  await sql.unsafe('vacuum analyze order_items')
  await sql.unsafe('vacuum analyze order_counts')
  let benchCount = 0
  for (let g = 0; g < options.count; g++) if (isBenchOrder(g)) benchCount++
  return { firstNumber, count: options.count, benchCount, ms: performance.now() - started }
}

/** How many of the key's orders a `query` matches, with the predicate the app uses (db/orders.ts listOrdersForKey). */
export async function countOrderMatches (sql: postgres.Sql, apiKeyId: string, term: string): Promise<number> {
  const like = `%${term.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  const [row] = await sql<Array<{ n: number }>>`
    select count(*)::int as n from orders
    where api_key_id = ${apiKeyId}
      and (lower(customer_name || ' ' || coalesce(customer_phone, '')) like ${like}
           ${/^\d+$/.test(term) ? sql`or order_number::text like ${`${term}%`}` : sql``})`
  return row!.n
}

/**
 * What the order-read scenarios ask for, drawn anew for each request: an order-number
 * prefix (a random order number of the bench key without its last digit: ~10 orders by
 * number, plus the phones that hold the digits) and a customer-name fragment (a surname's
 * stem and 2 or more letters of its ending, "Hartwe", "Ashbou": from tens to a few
 * thousand orders).
 */
export function orderReadTerms (bulk: BulkOrders, seed: number) {
  const random = randomGenerator(seed + 19)
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!
  const orderNumber = () => {
    for (;;) {
      const g = Math.floor(random() * bulk.count)
      if (isBenchOrder(g)) return bulk.firstNumber + g
    }
  }
  const numberPrefix = () => String(orderNumber()).slice(0, -1)
  const nameFragment = () => {
    const ending = pick(SURNAME_ENDINGS)
    return `${pick(SURNAME_STEMS)}${ending.slice(0, 2 + Math.floor(random() * (ending.length - 1)))}`.toLowerCase()
  }
  return { numberPrefix, nameFragment }
}
