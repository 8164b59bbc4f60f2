// One snapshot, joined to the feed: two instances (real HTTP servers on one database) take
// orders, holds, status changes and catalogue imports throughout an export of the catalogue
// and of a key's orders. A copy rebuilt from the exports plus the feed followed from their
// changesCursor must equal a fresh full read at the end, every record and every field; a
// change may come in both, none may be missing.
//
// The catalogue puts pairs of products at both ends of the list ("Aa pair i" first, "Zz pair
// i" last, some 8 MB of other products between them) and every write changes both products
// of a pair in one transaction (an order or a hold of one unit of each, a cancellation giving
// both back, an import setting both): in any one snapshot the two have the same stock. The
// export's client stops reading after the first products while the writes go on, so on
// PostgreSQL the server reads the "Zz" rows after them: a read not from one snapshot would
// show the pairs apart. Other imports rename products (moving them in the list), add new
// ones, and a discount window opens during the export.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import type { OrderStatus } from '../../schemas/orders.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { checkCatalog } from '../../lib/catalog-file.ts'
import { parseExport, seedPlainProducts, SocketExport } from '../export.ts'
import { authHeaders, buildTestApp, createTestDatabase, makeKey, makeProduct, sleep, UNLIMITED, usingPostgres } from '../helper.ts'

t.setTimeout(240_000)

const PAIRS = 40
// On PostgreSQL more than the kernel buffers between client and server (so the server is
// held mid-stream); PGlite reads its snapshot whole first, so a smaller catalogue does.
const FILLER = usingPostgres ? 10_000 : 2_000
const SETTLE_MS = 200
/** The least each kind of write must do while the export's client is stopped (a busy machine waits longer, up to 30 s). */
const ENOUGH = { orders: 30, holds: 10, statuses: 5, imports: 3 }

const { database: first, url } = await createTestDatabase(t, { poolSize: 16 })
let second: Database = first
if (url !== undefined) {
  second = await openDatabase({ url, poolSize: 16 })
  t.teardown(() => second.close())
}
await seedPlainProducts(first, FILLER, { searchable: false })
const env = { ...UNLIMITED, READ_SETTLE_MS: String(SETTLE_MS), STATE_POLL_MS: '50', EVENT_PUBLISH_MS: '10', DISCOUNT_SWEEP_MS: '100' }
const one = await buildTestApp(t, { database: first, env, contract: false })
const two = await buildTestApp(t, { database: second, env: { ...env, EVENT_PUBLISH_MS: '13' }, contract: false })
await Promise.all([one.listen({ host: '127.0.0.1', port: 0 }), two.listen({ host: '127.0.0.1', port: 0 })])
const instances = [one, two] as const
const { key } = await makeKey(one)
const base = (app: App) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

const pad = (i: number) => String(i).padStart(2, '0')
const pairs = Array.from({ length: PAIRS }, (_, i) => [
  makeProduct({ name: `Aa pair ${pad(i)}`, quantity: 100_000, price: 5 + i }),
  makeProduct({ name: `Zz pair ${pad(i)}`, quantity: 100_000, price: 5 + i })
] as const)
// Other products that get renamed to the front of the list during the export.
const movers = (await execute<{ id: string, sku: string, price: string }>(first.db, sql`
  select id, sku, price::text as price from products where name like 'Bulk%' order by lower(name), id limit 5 offset ${Math.floor(FILLER / 2)}`))
await importCatalog(first, checkCatalog({ products: pairs.flat() }))

async function send (app: App, method: string, path: string, body?: unknown): Promise<{ status: number, json: Record<string, unknown> }> {
  const res = await fetch(`${base(app)}${path}`, {
    method,
    headers: { ...authHeaders(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { status: res.status, json: text === '' ? {} : JSON.parse(text) as Record<string, unknown> }
}

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!
const pairLines = (quantity = 1) => {
  const [a, z] = pick(pairs)
  return [{ productId: a.id, quantity }, { productId: z.id, quantity }]
}

t.test('a copy rebuilt from the exports and the feed is the store, every record and every field', async (t) => {
  const writes = { orders: 0, holds: 0, statuses: 0, imports: 0, failures: [] as string[] }
  const placed: Array<{ orderNumber: string, status: OrderStatus }> = []
  const running = { on: true }

  // A discount that starts while the export's client is stopped: its document goes stale, and
  // the sweep moves it (with an event) after the snapshot.
  const boundary = makeProduct({ name: 'Zz boundary kettle', price: 40, quantity: null, discount: { type: 'percentage', value: 25, startsAt: new Date(Date.now() + 2500).toISOString(), endsAt: null } })
  await importCatalog(first, checkCatalog({ products: [boundary] }))

  const writers = Promise.all([
    ...instances.map(async (app) => {
      while (running.on) {
        const res = await send(app, 'POST', '/external/v1/orders', { customerName: 'Ada Lovelace', customerPhone: '+14155550123', items: pairLines(1 + Math.floor(Math.random() * 2)) })
        if (res.status === 201) {
          writes.orders++
          placed.push({ orderNumber: res.json.orderNumber as string, status: 'pending' })
        } else writes.failures.push(`order ${res.status} ${JSON.stringify(res.json)}`)
        await sleep(15)
      }
    }),
    ...instances.map(async (app, n) => {
      while (running.on) {
        const items = pairLines()
        const held = await send(app, 'POST', '/external/v1/reservations', { items, ttlSeconds: 60 })
        if (held.status !== 201) {
          writes.failures.push(`hold ${held.status} ${JSON.stringify(held.json)}`)
          continue
        }
        // Half the holds become orders (no second decrement), half are released (units back).
        const settled = n === 0
          ? await send(instances[1 - n]!, 'POST', '/external/v1/orders', { customerName: 'Grace Hopper', customerPhone: '+14155550123', items, reservationId: held.json.id })
          : await send(instances[1 - n]!, 'DELETE', `/external/v1/reservations/${held.json.id as string}`)
        if (settled.status >= 300) writes.failures.push(`hold settled ${settled.status} ${JSON.stringify(settled.json)}`)
        if (n === 0 && settled.status === 201) placed.push({ orderNumber: settled.json.orderNumber as string, status: 'pending' })
        writes.holds++
        await sleep(40)
      }
    }),
    (async () => {
      const next: Partial<Record<OrderStatus, OrderStatus>> = { pending: 'confirmed', confirmed: 'processing' }
      while (running.on) {
        const order = placed.length > 0 ? pick(placed) : undefined
        // Some orders are cancelled: both units of their pair come back in one transaction.
        const to = order === undefined ? undefined : Math.random() < 0.3 && order.status !== 'processing' ? 'cancelled' : next[order.status]
        if (order !== undefined && to !== undefined) {
          const change = await setOrderStatus(pick([first, second]), order.orderNumber, to)
          if (change.ok) {
            order.status = change.order.status
            writes.statuses++
          }
        }
        await sleep(50)
      }
    })(),
    (async () => {
      for (let round = 1; running.on; round++) {
        const stocked = [...pairs].sort(() => Math.random() - 0.5).slice(0, 3).flatMap(([a, z]) => [{ ...a, quantity: 100_000 + round }, { ...z, quantity: 100_000 + round }])
        const renamed = movers.filter((_, i) => i === round % movers.length).map((m) => ({
          id: m.id, name: `Ab moved ${round}`, sku: m.sku, price: Number(m.price), quantity: 1000, isAvailable: true
        }))
        const arrivals = [makeProduct({ name: `Mm arrival ${round}` })]
        await importCatalog(pick([first, second]), checkCatalog({ products: [...stocked, ...renamed, ...arrivals] as CatalogProduct[] }))
        writes.imports++
        await sleep(150)
      }
    })()
  ])

  // The exports: the catalogue on one instance, the key's orders on the other; each client
  // reads a little, then stops while the writes go on, then reads to the end. A second of
  // writes first, so the exports hold orders, and changes made before them.
  await sleep(1000)
  const products = await SocketExport.open(`${base(one)}/external/v1/products/export`, authHeaders(key), { keep: true })
  const orders = await SocketExport.open(`${base(two)}/external/v1/orders/export`, authHeaders(key), { keep: true })
  t.equal(products.status, 200)
  t.equal(orders.status, 200)
  await Promise.all([products.take(256 * 1024), orders.take(1)])
  const stoppedAt = Date.now()
  const before = { ...writes }
  const enough = () => (Object.keys(ENOUGH) as Array<keyof typeof ENOUGH>).every((kind) => writes[kind] - before[kind] >= ENOUGH[kind])
  while ((!enough() || Date.now() - stoppedAt < 3000) && Date.now() - stoppedAt < 30_000) await sleep(50)
  const during = Object.fromEntries((Object.keys(ENOUGH) as Array<keyof typeof ENOUGH>).map((kind) => [kind, writes[kind] - before[kind]]))
  t.ok(enough(), `while the export's client was stopped: ${JSON.stringify(during)}`)
  if (usingPostgres) {
    const [row] = await execute<{ n: number }>(first.db, sql`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and state = 'idle in transaction' and query like 'fetch%'`)
    t.ok(row!.n >= 1, 'and the server was still reading the catalogue\'s snapshot, mid-list')
  }
  t.equal(await products.finish(), 'complete')
  t.equal(await orders.finish(), 'complete')
  await sleep(300)
  running.on = false
  await writers
  t.same(writes.failures, [], 'every write succeeded')

  const exported = parseExport(products.body)
  const exportedOrders = parseExport(orders.body)
  t.equal(exported.end?.count, exported.records.length)
  t.equal(exported.end?.changesCursor, products.headers['changes-cursor'])
  t.equal(new Set(exported.records.map((r) => r.id)).size, exported.records.length, 'no product twice')

  // One snapshot: both products of every pair in the same state.
  const byName = new Map(exported.records.map((r) => [r.name as string, r]))
  const apart = pairs.filter((_, i) => byName.get(`Aa pair ${pad(i)}`)?.quantity !== byName.get(`Zz pair ${pad(i)}`)?.quantity)
  const lineOf = (name: string) => exported.records.findIndex((r) => r.name === name)
  t.same(apart.map(([a]) => a.name), [], `each pair has one stock in the export (${PAIRS} pairs, ${lineOf('Zz pair 00') - lineOf('Aa pair 00')} lines apart)`)
  t.ok(pairs.some(([a]) => byName.get(a.name)!.quantity !== 100_000), 'and the writes before the snapshot show in it')

  // The copies: the exports, then the feed from each one's cursor on alternating instances.
  const productCopy = new Map(exported.records.map((r) => [r.id as string, r]))
  const orderCopy = new Map(exportedOrders.records.map((r) => [r.id as string, r]))
  const follow = async (cursor: string, kind: 'product' | 'order', copy: Map<string, unknown>) => {
    let reads = 0
    let quiet = 0
    let applied = 0
    // Until nothing new has come for longer than the feed's settle window.
    while (quiet < 8) {
      const app = instances[reads++ % 2]!
      const page = await send(app, 'GET', `/external/v1/changes?after=${cursor}&limit=500`)
      const items = page.json.items as Array<{ id: string, type: string, resourceId: string }>
      for (const event of items.filter((e) => e.type.startsWith(`${kind}.`))) {
        const read = await send(instances[reads % 2]!, 'GET', `/external/v1/${kind}s/${event.resourceId}`)
        if (read.status === 404) copy.delete(event.resourceId)
        else copy.set(event.resourceId, read.json)
        applied++
      }
      quiet = items.length === 0 ? quiet + 1 : 0
      cursor = page.json.nextCursor as string
      if (page.json.hasMore !== true) await sleep(SETTLE_MS / 2)
    }
    return applied
  }
  const appliedProducts = await follow(exported.end!.changesCursor, 'product', productCopy)
  const appliedOrders = await follow(exportedOrders.end!.changesCursor, 'order', orderCopy)

  // The fresh full read: the lists crawled by cursor (an order read by id for its items).
  const crawl = async (list: string) => {
    const items: Array<Record<string, unknown>> = []
    for (let path: string | null = `/external/v1/${list}`; path !== null;) {
      const page = await send(two, 'GET', path)
      items.push(...page.json.items as Array<Record<string, unknown>>)
      path = page.json.nextCursor === null ? null : `/external/v1/${list}?cursor=${encodeURIComponent(page.json.nextCursor as string)}`
    }
    return items
  }
  const truthProducts = await crawl('products')
  const truthOrders = await Promise.all((await crawl('orders')).map(async (o) => (await send(one, 'GET', `/external/v1/orders/${o.id as string}`)).json))
  const sorted = (records: Iterable<unknown>) => [...records].sort((a, b) => ((a as { id: string }).id < (b as { id: string }).id ? -1 : 1))

  t.equal(productCopy.size, truthProducts.length, `as many products (${truthProducts.length}: ${exported.records.length} exported, ${appliedProducts} product events applied)`)
  t.same(sorted(productCopy.values()), sorted(truthProducts), 'the rebuilt catalogue is the catalogue, every product, every field')
  t.equal(orderCopy.size, truthOrders.length, `as many orders (${truthOrders.length}: ${exportedOrders.records.length} exported, ${appliedOrders} order events applied)`)
  t.same(sorted(orderCopy.values()), sorted(truthOrders), 'the rebuilt orders are the key\'s orders, with their items and statuses')
  const kettle = truthProducts.find((p) => p.id === boundary.id)!
  t.equal(kettle.sellPrice, 30, 'the discount that opened during the export is in the copy too')
})
