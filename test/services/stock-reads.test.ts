// What the catalogue shows of stock after concurrent writes to one product's combinations:
// every order, hold and release re-renders the product's document after its own change and
// while it holds the product's row, so the last writer never renders from a stale view of
// the other combinations. PGlite is one connection, so these need TEST_DATABASE_URL.
import { randomUUID } from 'node:crypto'
import t, { type Test } from 'tap'
import type { App } from '../../app.ts'
import { findProduct } from '../../db/products.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { buildTestApp, createTestDatabase, getJson, importProducts, makeKey, orderBody, pollState, postOrder, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const skip = usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite runs one transaction at a time'

/** A product with `count` combinations of `each` units. */
function manyCombinations (count: number, each: number): CatalogProduct {
  const variant = randomUUID()
  const options = Array.from({ length: count }, (_, i) => ({ id: randomUUID(), name: `Size ${i}` }))
  return {
    id: randomUUID(),
    name: 'Many Sizes',
    price: 10,
    isAvailable: true,
    variants: [{ id: variant, name: 'Size', options }],
    combinations: options.map((o) => ({ id: randomUUID(), optionIds: [o.id], price: 10, quantity: each, isAvailable: true }))
  }
}

interface Shown { quantity: number | null, isAvailable: boolean, combinations: Array<{ id: string, quantity: number | null, isAvailable: boolean }> }

async function twoInstances (t: Parameters<typeof createTestDatabase>[0]) {
  const { database } = await createTestDatabase(t, { poolSize: 30 })
  const apps: App[] = [await buildTestApp(t, { database, env: UNLIMITED }), await buildTestApp(t, { database, env: UNLIMITED })]
  const { key } = await makeKey(apps[0]!)
  return { apps, key }
}

async function shown (app: App, key: string, id: string): Promise<Shown> {
  await pollState(app)
  return (await getJson(app, key, `/external/v1/products/${id}`)).json<Shown>()
}

/** The stored document against the product rendered now from its rows. */
async function expectFresh (t: Test, app: App, key: string, id: string) {
  const fresh = await findProduct(app.database.db, id)
  t.same(await shown(app, key, id), JSON.parse(JSON.stringify(fresh!.product)), 'the product as read equals a fresh render of its rows')
}

t.test('48 orders at once over 12 combinations of 4 units sell out, and the product shows sold out', { skip }, async (t) => {
  const { apps, key } = await twoInstances(t)
  const product = manyCombinations(12, 4)
  await importProducts(apps[0]!, [product])
  const answers = await Promise.all(Array.from({ length: 48 }, (_, i) => postOrder(apps[i % 2]!, key,
    orderBody([{ productId: product.id, combinationId: product.combinations![i % 12]!.id, quantity: 1 }]))))
  t.same(answers.map((a) => a.statusCode).filter((s) => s !== 201), [], 'every order was placed')
  for (const app of apps) {
    const read = await shown(app, key, product.id)
    t.equal(read.quantity, 0, 'quantity 0')
    t.equal(read.isAvailable, false, 'not available')
    t.same(read.combinations.map((c) => c.quantity), Array(12).fill(0), 'every combination at 0')
    const listed = (await getJson(app, key, '/external/v1/products?isAvailable=true')).json<{ items: Array<{ id: string }> }>()
    t.notOk(listed.items.some((p) => p.id === product.id), 'not listed as available')
  }
  await expectFresh(t, apps[0]!, key, product.id)
})

t.test('12 holds at once, one per combination, show at once; releasing them all at once shows the stock back', { skip }, async (t) => {
  const { apps, key } = await twoInstances(t)
  const product = manyCombinations(12, 4)
  await importProducts(apps[0]!, [product])
  const holds = await Promise.all(product.combinations!.map((c, i) => hold(apps[i % 2]!, key, { items: [{ productId: product.id, combinationId: c.id, quantity: 2 }] })))
  t.same(holds.map((h) => h.statusCode), Array(12).fill(201), 'every hold granted')
  for (const app of apps) {
    const read = await shown(app, key, product.id)
    t.equal(read.quantity, 24, 'the product shows 48 − 24 held')
    t.same(read.combinations.map((c) => c.quantity), Array(12).fill(2), 'every combination shows its 2 held units taken')
  }
  await expectFresh(t, apps[0]!, key, product.id)
  const released = await Promise.all(holds.map((h, i) => release(apps[(i + 1) % 2]!, key, h.json<Reservation>().id)))
  t.same(released.map((r) => r.statusCode), Array(12).fill(204), 'every hold released')
  for (const app of apps) t.equal((await shown(app, key, product.id)).quantity, 48, 'all 48 units back')
  await expectFresh(t, apps[1]!, key, product.id)
})
