// An integrator's sync client, as docs/integrators.md tells it to work: take the head of the
// feed, crawl the lists by cursor, then follow the feed, reading each resource it names. While
// it runs, a storm of orders, status changes and imports hits the store on two instances.
// Its copy must end identical to the service's own state.
import t from 'tap'
import type { App } from '../../app.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import type { OrderStatus } from '../../schemas/orders.ts'
import { authHeaders, buildTestApp, createTestDatabase, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, UNLIMITED } from '../helper.ts'

const { database } = await createTestDatabase(t)
const env = { ...UNLIMITED, READ_SETTLE_MS: '100', STATE_POLL_MS: '20', EVENT_PUBLISH_MS: '10' }
const one = await buildTestApp(t, { database, env })
const two = await buildTestApp(t, { database, env })
const { key } = await makeKey(one)

interface Page { items: Array<{ id: string }>, nextCursor: string | null }
interface Feed { items: Array<{ id: string, type: string, resourceId: string }>, nextCursor: string, hasMore: boolean }

async function getJson<T> (app: App, url: string): Promise<{ status: number, body: T }> {
  const res = await app.inject({ url, headers: authHeaders(key) })
  return { status: res.statusCode, body: res.json<T>() }
}

/** Every record of a list, following cursors. */
async function crawl (app: App, list: string): Promise<Map<string, unknown>> {
  const copy = new Map<string, unknown>()
  let url = `/external/v1/${list}`
  for (;;) {
    const { body } = await getJson<Page>(app, url)
    for (const item of body.items) copy.set(item.id, item)
    if (body.nextCursor === null) return copy
    url = `/external/v1/${list}?cursor=${encodeURIComponent(body.nextCursor)}`
  }
}

const catalogue = Array.from({ length: 40 }, (_, i) => makeProduct({ name: `Sync ${i}`, quantity: 1000, price: 5 + i }))
await importProducts(one, catalogue)

t.test('a copy kept by cursors and the feed ends identical to the store after a storm of changes', async (t) => {
  const apps = [one, two]
  const storming = { on: true }
  let imports = 0
  const placed: Array<{ orderNumber: string, status: OrderStatus }> = []

  // The storm: orders on both instances, status changes, price and stock imports.
  const storm = Promise.all([
    ...apps.map(async (app) => {
      for (let i = 0; storming.on; i++) {
        const res = await postOrder(app, key, orderBody([line(catalogue[(i * 7) % catalogue.length]!, 1 + (i % 3))]))
        if (res.statusCode === 201) placed.push({ orderNumber: res.json<{ orderNumber: string }>().orderNumber, status: 'pending' })
        await sleep(30)
      }
    }),
    (async () => {
      const next: Record<string, OrderStatus> = { pending: 'confirmed', confirmed: 'processing', processing: 'shipped' }
      while (storming.on) {
        const order = placed[Math.floor(Math.random() * placed.length)]
        if (order && next[order.status]) {
          const change = await setOrderStatus(database, order.orderNumber, next[order.status]!)
          if (change.ok) order.status = change.order.status
        }
        await sleep(40)
      }
    })(),
    (async () => {
      for (let round = 0; storming.on; round++, imports++) {
        const changed = catalogue.filter((_, i) => i % 5 === round % 5).map((p) => ({ ...p, price: p.price + round, quantity: 1000 + round }))
        await importProducts(one, [...changed, makeProduct({ name: `Sync new ${round}` })])
        await sleep(300)
      }
    })()
  ])
  // Until enough has happened (the machine may be slow), for at most 30 s.
  const started = Date.now()
  const enough = () => (placed.length >= 20 && imports >= 3 && Date.now() - started > 2000) || Date.now() - started > 30_000

  // The client: head, crawl, then follow the feed on alternating instances.
  await sleep(100)
  let cursor = (await getJson<Feed>(one, '/external/v1/changes?limit=0')).body.nextCursor
  const products = await crawl(two, 'products')
  const orders = await crawl(one, 'orders')
  let reads = 0
  const follow = async () => {
    const app = apps[reads++ % 2]!
    {
      const { body } = await getJson<Feed>(app, `/external/v1/changes?after=${cursor}&limit=500`)
      for (const event of body.items) {
        const [kind] = event.type.split('.')
        const copy = kind === 'product' ? products : orders
        const { status, body: record } = await getJson<unknown>(apps[reads % 2]!, `/external/v1/${kind}s/${event.resourceId}`)
        if (status === 404) copy.delete(event.resourceId)
        else copy.set(event.resourceId, withoutItems(record))
      }
      cursor = body.nextCursor
      if (!body.hasMore) await sleep(20)
    }
  }
  while (!enough()) await follow()
  storming.on = false
  await storm
  // The storm is over: follow until the feed is quiet for longer than it takes to settle.
  let quiet = 0
  while (quiet < 10) {
    const before = cursor
    await follow()
    quiet = cursor === before ? quiet + 1 : 0
    await sleep(30)
  }

  const truthProducts = await crawl(one, 'products')
  const truthOrders = await crawl(two, 'orders')
  t.ok(placed.length > 0 && imports > 0, `the storm placed ${placed.length} orders and ran ${imports} imports`)
  t.equal(products.size, truthProducts.size, 'as many products')
  t.equal(orders.size, truthOrders.size, 'as many orders')
  t.same(normalised(products), normalised(truthProducts), 'the copy of the catalogue is the catalogue')
  t.same(normalised(orders), normalised(truthOrders), 'the copy of the orders is the orders')
})

/** An order read by id carries its items; list entries do not. */
function withoutItems (record: unknown): unknown {
  const { items: _items, ...rest } = record as Record<string, unknown>
  return rest
}

function normalised (copy: Map<string, unknown>) {
  return [...copy.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, record]) => withoutItems(record))
}
