// Freshness across instances, with the default polling and settle times: a change is seen
// everywhere (within a second on a quiet machine: the times are printed, not asserted, since a
// busy machine only delays them), and once the feed shows it every read shows it.
import t from 'tap'
import type { App } from '../../app.ts'
import { authHeaders, buildTestApp, created, createTestDatabase, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, UNLIMITED } from '../helper.ts'

const { database } = await createTestDatabase(t)
const writer = await buildTestApp(t, { database, env: UNLIMITED })
const reader = await buildTestApp(t, { database, env: UNLIMITED })
const { key } = await makeKey(writer)

interface Product { id: string, quantity: number | null, price: number, isAvailable: boolean }

async function product (app: App, id: string): Promise<Product> {
  const res = await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(key) })
  return res.json<Product>()
}

/** How long until `probe` holds; fails only past `limitMs`, a bound for a machine however busy. */
async function within (probe: () => Promise<boolean>, limitMs = 30_000): Promise<number> {
  const start = Date.now()
  for (;;) {
    if (await probe()) return Date.now() - start
    if (Date.now() - start > limitMs) throw new Error(`not seen within ${limitMs} ms`)
    await sleep(10)
  }
}

t.test('stock, availability and prices changed on one instance are read on the other', async (t) => {
  const mug = makeProduct({ name: 'Fresh Mug', price: 10, quantity: 3 })
  await importProducts(writer, [mug])
  await within(async () => (await product(reader, mug.id)).quantity === 3)
  // The reader caches it now; the writer takes stock, the last units included.
  t.equal((await product(reader, mug.id)).quantity, 3)
  await created(t, await postOrder(writer, key, orderBody([line(mug, 3)])))
  const stockMs = await within(async () => {
    const seen = await product(reader, mug.id)
    return seen.quantity === 0 && !seen.isAvailable
  })
  t.pass(`stock and availability seen on the other instance after ${stockMs} ms`)
  const listed = async () => (await reader.inject({ url: '/external/v1/products?isAvailable=false&query=fresh%20mug', headers: authHeaders(key) })).json<{ total: number }>().total
  await within(async () => (await listed()) === 1)
  await importProducts(writer, [{ ...mug, price: 12.5, quantity: 3 }])
  const priceMs = await within(async () => (await product(reader, mug.id)).price === 12.5)
  t.pass(`a price change seen after ${priceMs} ms`)
})

t.test('once the feed shows a change, every instance reads it', async (t) => {
  const lamp = makeProduct({ name: 'Feed-Fresh Lamp', price: 5, quantity: 40 })
  await importProducts(writer, [lamp])
  const head = (await writer.inject({ url: '/external/v1/changes?limit=0', headers: authHeaders(key) })).json<{ nextCursor: string }>().nextCursor
  for (let round = 0; round < 5; round++) {
    const before = (await product(reader, lamp.id)).quantity!
    await created(t, await postOrder(writer, key, orderBody([line(lamp, 1)])))
    // Follow the feed on the writer until the product's event shows; then read on the other instance at once.
    let seen = false
    await within(async () => {
      const feed = (await writer.inject({ url: `/external/v1/changes?after=${head}&limit=500`, headers: authHeaders(key) }))
        .json<{ items: Array<{ type: string, resourceId: string }> }>()
      seen = feed.items.filter((e) => e.type === 'product.updated' && e.resourceId === lamp.id).length > round
      return seen
    })
    t.equal((await product(reader, lamp.id)).quantity, before - 1, `round ${round}: the other instance shows the change the feed reported`)
  }
})
