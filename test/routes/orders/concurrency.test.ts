// Races on create order: stock, order numbers and Idempotency-Key, on real PostgreSQL with
// many connections. PGlite is one connection (it serialises every transaction), so there
// these tests would prove nothing: they are skipped without TEST_DATABASE_URL.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../app.ts'
import { execute } from '../../../db/client.ts'
import type { CatalogProduct } from '../../../schemas/catalog-file.ts'
import { buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, orderBody, postOrder, UNLIMITED, usingPostgres } from '../../helper.ts'

const skip = usingPostgres ? false : 'needs TEST_DATABASE_URL: race tests prove nothing on PGlite, which is one connection'

interface Answer { statusCode: number, body: { id?: string, orderNumber?: string, error?: string, message?: string }, replayed: boolean }

async function setup (): Promise<{ app: App, key: string }> {
  const { database } = await createTestDatabase(t, { poolSize: 40 })
  const app = await buildTestApp(t, { database, env: UNLIMITED })
  const { key } = await makeKey(app)
  return { app, key }
}

const ctx = usingPostgres ? await setup() : null

async function post (app: App, key: string, payload: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await postOrder(app, key, payload, headers)
  return { statusCode: res.statusCode, body: res.json(), replayed: res.headers['idempotent-replayed'] === 'true' }
}

/** `n` requests at once. */
function all (n: number, send: (i: number) => Promise<Answer>): Promise<Answer[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => send(i)))
}

const count = (answers: Answer[], status: number, error?: string) =>
  answers.filter((a) => a.statusCode === status && (error === undefined || a.body.error === error)).length

async function one<R> (app: App, query: ReturnType<typeof sql>): Promise<R> {
  const [row] = await execute<R>(app.database.db, query)
  return row!
}

t.test('60 concurrent orders of 1 unit for a stock of 10: exactly 10 succeed', { skip }, async (t) => {
  const { app, key } = ctx!
  const product = makeProduct({ name: 'Scarce Vase', price: 12.5, quantity: 10 })
  await importProducts(app, [product])

  const answers = await all(60, () => post(app, key, orderBody([{ productId: product.id, quantity: 1 }])))
  t.equal(count(answers, 201), 10, '10 created')
  t.equal(count(answers, 400, 'order_creation_failed'), 50, '50 order_creation_failed')
  t.same(answers.filter((a) => a.statusCode !== 201 && a.statusCode !== 400), [], 'nothing else (no 409, no 500)')
  for (const a of answers.filter((a) => a.statusCode === 400)) t.match(a.body.message, /stock/i)

  t.match(await one(app, sql`select quantity from products where id = ${product.id}`), { quantity: 0 }, 'stock 0 in the database')
  t.match(await one(app, sql`select count(distinct order_id)::int as n, coalesce(sum(quantity), 0)::int as units from order_items where product_id = ${product.id}`),
    { n: 10, units: 10 }, '10 order rows holding 10 units')
  const ids = answers.filter((a) => a.statusCode === 201).map((a) => a.body.id)
  t.equal(new Set(ids).size, 10, '10 different orders')
})

t.test('several units per order never oversell', { skip }, async (t) => {
  const { app, key } = ctx!
  const product = makeProduct({ name: 'Scarce Bowl', price: 3, quantity: 10 })
  await importProducts(app, [product])

  const answers = await all(20, () => post(app, key, orderBody([{ productId: product.id, quantity: 3 }])))
  t.equal(count(answers, 201), 3, '3 × 3 fit in 10')
  t.equal(count(answers, 400, 'order_creation_failed'), 17)
  t.match(await one(app, sql`select quantity from products where id = ${product.id}`), { quantity: 1 })
  t.match(await one(app, sql`select coalesce(sum(quantity), 0)::int as units from order_items where product_id = ${product.id}`), { units: 9 })
})

t.test('a combination\'s stock under concurrency', { skip }, async (t) => {
  const { app, key } = ctx!
  const variant = randomUUID(); const red = randomUUID(); const blue = randomUUID()
  const redCombo = randomUUID(); const blueCombo = randomUUID()
  const product: CatalogProduct = {
    id: randomUUID(),
    name: 'Race Shirt',
    price: 20,
    isAvailable: true,
    variants: [{ id: variant, name: 'Color', options: [{ id: red, name: 'Red' }, { id: blue, name: 'Blue' }] }],
    combinations: [
      { id: redCombo, optionIds: [red], price: 20, quantity: 5, isAvailable: true },
      { id: blueCombo, optionIds: [blue], price: 20, quantity: 100, isAvailable: true }
    ]
  }
  await importProducts(app, [product])

  const answers = await all(30, () => post(app, key, orderBody([{ productId: product.id, combinationId: redCombo, quantity: 1 }])))
  t.equal(count(answers, 201), 5, '5 created')
  t.equal(count(answers, 400, 'order_creation_failed'), 25)
  t.match(await one(app, sql`select quantity from combinations where id = ${redCombo}`), { quantity: 0 })
  t.match(await one(app, sql`select quantity from combinations where id = ${blueCombo}`), { quantity: 100 }, 'the other combination is untouched')
  t.match(await one(app, sql`select count(*)::int as n from order_items where combination_id = ${redCombo}`), { n: 5 })
})

t.test('lines in opposite orders do not deadlock', { skip }, async (t) => {
  const { app, key } = ctx!
  const a = makeProduct({ name: 'Deadlock A', price: 1, quantity: 100 })
  const b = makeProduct({ name: 'Deadlock B', price: 1, quantity: 100 })
  await importProducts(app, [a, b])

  const answers = await all(30, (i) => post(app, key, orderBody(i % 2 === 0
    ? [{ productId: a.id, quantity: 1 }, { productId: b.id, quantity: 1 }]
    : [{ productId: b.id, quantity: 1 }, { productId: a.id, quantity: 1 }])))
  t.equal(count(answers, 201), 30, 'every order created')
  t.match(await one(app, sql`select quantity from products where id = ${a.id}`), { quantity: 70 })
  t.match(await one(app, sql`select quantity from products where id = ${b.id}`), { quantity: 70 })
})

t.test('order numbers stay unique under concurrency', { skip }, async (t) => {
  const { app, key } = ctx!
  const product = makeProduct({ name: 'Untracked Napkin', price: 0.5, quantity: null })
  await importProducts(app, [product])

  const answers = await all(50, () => post(app, key, orderBody([{ productId: product.id, quantity: 1 }])))
  t.equal(count(answers, 201), 50, 'all 50 created')
  const numbers = answers.map((a) => a.body.orderNumber!)
  for (const n of numbers) t.match(n, /^\d+$/)
  t.equal(new Set(numbers).size, 50, '50 distinct order numbers')
  t.equal(new Set(answers.map((a) => a.body.id)).size, 50, '50 distinct ids')
})

t.test('20 concurrent requests with one Idempotency-Key and the same body create one order', { skip }, async (t) => {
  const { app, key } = ctx!
  const product = makeProduct({ name: 'Idempotent Plate', price: 9.99, quantity: 50 })
  await importProducts(app, [product])
  const payload = orderBody([{ productId: product.id, quantity: 2 }])

  const answers = await all(20, () => post(app, key, payload, { 'idempotency-key': 'race-1' }))
  t.same(answers.filter((a) => !(a.statusCode === 201 || (a.statusCode === 409 && a.body.error === 'idempotency_key_in_use'))), [],
    'every answer is 201 or 409 idempotency_key_in_use')
  const ok = answers.filter((a) => a.statusCode === 201)
  t.ok(ok.length >= 1, 'at least one 201')
  t.equal(new Set(ok.map((a) => a.body.id)).size, 1, 'every 201 carries the same order id')
  t.equal(ok.filter((a) => !a.replayed).length, 1, 'exactly one 201 is the original, the rest are replays')
  t.match(await one(app, sql`select count(distinct order_id)::int as n from order_items where product_id = ${product.id}`), { n: 1 }, 'exactly one order row')
  t.match(await one(app, sql`select quantity from products where id = ${product.id}`), { quantity: 48 }, 'stock taken once')

  const later = await post(app, key, payload, { 'idempotency-key': 'race-1' })
  t.equal(later.statusCode, 201)
  t.ok(later.replayed)
  t.equal(later.body.id, ok[0]!.body.id)
})

t.test('one Idempotency-Key with different bodies at once: one order, the rest refused', { skip }, async (t) => {
  const { app, key } = ctx!
  const product = makeProduct({ name: 'Idempotent Cup', price: 1, quantity: 100 })
  await importProducts(app, [product])

  const answers = await all(10, (i) => post(app, key, orderBody([{ productId: product.id, quantity: i + 1 }]), { 'idempotency-key': 'race-2' }))
  const created = answers.filter((a) => a.statusCode === 201)
  t.same(answers.filter((a) => !(a.statusCode === 201 || (a.statusCode === 422 && a.body.error === 'idempotency_key_reused') ||
    (a.statusCode === 409 && a.body.error === 'idempotency_key_in_use'))), [], 'only 201, 409 in use or 422 reused')
  t.equal(created.length, 1, 'one 201: no other body can replay it')
  t.equal(created[0]?.replayed, false)
  t.match(await one(app, sql`select count(distinct order_id)::int as n from order_items where product_id = ${product.id}`), { n: 1 })
})
