// order_creation_failed tells a program what to do with each line: every line that cannot
// be ordered is listed with a reason (and the units left when out of stock), and nothing
// changes.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { buildTestApp, expectError, importProducts, makeKey, makeProduct, orderBody, postOrder } from '../helper.ts'

const app = await buildTestApp(t)
const { key } = await makeKey(app)

const OPTION = { red: crypto.randomUUID(), blue: crypto.randomUUID() }
const COMBINATION = { red: crypto.randomUUID(), blue: crypto.randomUUID() }
const coffee = makeProduct({ name: 'Coffee', quantity: 2 })
const tea = makeProduct({ name: 'Tea', quantity: 10 })
const retired = makeProduct({ name: 'Retired', quantity: 5, isAvailable: false })
const shirt = makeProduct({
  name: 'Shirt',
  quantity: null,
  variants: [{ id: crypto.randomUUID(), name: 'Color', options: [{ id: OPTION.red, name: 'Red' }, { id: OPTION.blue, name: 'Blue' }] }],
  combinations: [
    { id: COMBINATION.red, optionIds: [OPTION.red], quantity: 1, price: 20, isAvailable: true },
    { id: COMBINATION.blue, optionIds: [OPTION.blue], quantity: 4, price: 20, isAvailable: false }
  ]
})
await importProducts(app, [coffee, tea, retired, shirt])

const order = (items: unknown[]) => postOrder(app, key, orderBody(items))
const stock = async () => execute<{ id: string, quantity: number | null }>(app.database.db,
  sql`select id, quantity from products union all select id, quantity from combinations order by id`)

t.test('every failing line is reported, in line order, with a reason a program can act on', async (t) => {
  const before = await stock()
  const res = await order([
    { productId: tea.id, quantity: 1 },
    { productId: coffee.id, quantity: 3 },
    { productId: retired.id },
    { productId: shirt.id },
    { productId: shirt.id, combinationId: crypto.randomUUID() },
    { productId: tea.id, combinationId: COMBINATION.red },
    { productId: shirt.id, combinationId: COMBINATION.blue },
    { productId: shirt.id, combinationId: COMBINATION.red, quantity: 2 }
  ])
  const body = expectError(t, res, 400, 'order_creation_failed', { details: true })
  t.match(body.details, [
    { path: 'items[1]', reason: 'out_of_stock', available: 2, message: /Coffee/ },
    { path: 'items[2]', reason: 'unavailable', message: /Retired/ },
    { path: 'items[3]', reason: 'combination_required', message: /Shirt/ },
    { path: 'items[4]', reason: 'combination_mismatch' },
    { path: 'items[5]', reason: 'combination_mismatch' },
    { path: 'items[6]', reason: 'unavailable', message: /Shirt \(Blue\)/ },
    { path: 'items[7]', reason: 'out_of_stock', available: 1, message: /Shirt \(Red\)/ }
  ])
  t.equal(body.details!.length, 7, 'the good line (items[0]) is not listed')
  for (const detail of body.details!) {
    t.same(Object.keys(detail).sort(), detail.reason === 'out_of_stock' ? ['available', 'message', 'path', 'reason'] : ['message', 'path', 'reason'])
  }
  t.same(await stock(), before, 'no stock was taken')
})

t.test('lines of one product share its stock: both are out of stock together', async (t) => {
  const body = expectError(t, await order([{ productId: coffee.id }, { productId: tea.id }, { productId: coffee.id, quantity: 2 }]), 400, 'order_creation_failed', { details: true })
  t.match(body.details, [{ path: 'items[0]', reason: 'out_of_stock', available: 2 }, { path: 'items[2]', reason: 'out_of_stock', available: 2 }])
  t.equal(body.details!.length, 2)
})

t.test('a single failing line names itself in the message', async (t) => {
  const body = expectError(t, await order([{ productId: retired.id }]), 400, 'order_creation_failed', { details: true })
  t.match(body.message, /^items\[0\]: "Retired" is not available/)
})

t.test('an unknown product is still invalid_item, before any line reason', async (t) => {
  expectError(t, await order([{ productId: retired.id }, { productId: crypto.randomUUID() }]), 400, 'invalid_item')
})
