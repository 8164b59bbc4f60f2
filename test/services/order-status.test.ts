import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { App } from '../../app.ts'
import { publishChanges } from '../../services/changes.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { ORDER_STATUSES, type OrderStatus } from '../../schemas/orders.ts'
import { authHeaders, buildTestApp, created, importProducts, line, makeKey, makeProduct, orderBody, pollState, postOrder, UNLIMITED } from '../helper.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

interface Summary { id: string, orderNumber: string, status: OrderStatus }

// the operator's transitions, written out here rather than imported, so the test checks the code.
const ALLOWED: Array<[OrderStatus, OrderStatus]> = [
  ['pending', 'confirmed'], ['pending', 'cancelled'],
  ['confirmed', 'processing'], ['confirmed', 'cancelled'],
  ['processing', 'shipped'], ['processing', 'cancelled'],
  ['shipped', 'delivered']
]
// The path from pending to each status through allowed transitions.
const PATH: Record<OrderStatus, OrderStatus[]> = {
  pending: [],
  confirmed: ['confirmed'],
  processing: ['confirmed', 'processing'],
  shipped: ['confirmed', 'processing', 'shipped'],
  delivered: ['confirmed', 'processing', 'shipped', 'delivered'],
  cancelled: ['cancelled']
}

const app = await buildTestApp(t, { env: UNLIMITED })
const { key } = await makeKey(app)
const product = makeProduct({ name: 'Status Teacup', price: 3.5, quantity: null })
await importProducts(app, [product])

async function newOrder (t: T): Promise<Summary> {
  const order = await created<Summary>(t, await postOrder(app, key, orderBody([line(product, 1)])))
  t.equal(order.status, 'pending')
  return order
}

async function statusSeen (app: App, ref: string): Promise<OrderStatus> {
  const res = await app.inject({ url: `/external/v1/orders/${ref}`, headers: authHeaders(key) })
  return res.json<Summary>().status
}

/** An order brought to `status` through allowed transitions. */
async function orderIn (t: T, status: OrderStatus): Promise<Summary> {
  const order = await newOrder(t)
  for (const next of PATH[status]) {
    const result = await setOrderStatus(app.database, order.id, next)
    t.equal(result.ok, true, `setup: → ${next}`)
  }
  t.equal(await statusSeen(app, order.id), status, `setup: the order is ${status}`)
  return order
}

t.test('every allowed transition succeeds and GET shows the new status', async (t) => {
  for (const [index, [from, to]] of ALLOWED.entries()) {
    await t.test(`${from} → ${to}`, async (t) => {
      const order = await orderIn(t, from)
      // Alternate the two ways of naming an order.
      const ref = index % 2 === 0 ? order.orderNumber : order.id
      const result = await setOrderStatus(app.database, ref, to)
      t.match(result, { ok: true, from, order: { id: order.id, orderNumber: order.orderNumber, status: to } })
      t.equal(await statusSeen(app, order.id), to)
      t.equal(await statusSeen(app, order.orderNumber), to)
    })
  }
})

t.test('a whole life: pending → confirmed → processing → shipped → delivered', async (t) => {
  const order = await newOrder(t)
  for (const [i, next] of (['confirmed', 'processing', 'shipped', 'delivered'] as const).entries()) {
    const result = await setOrderStatus(app.database, i % 2 === 0 ? order.id : order.orderNumber, next)
    t.equal(result.ok, true, `→ ${next}`)
    t.equal(await statusSeen(app, order.id), next)
  }
})

t.test('every other transition is refused as forbidden and changes nothing', async (t) => {
  const allowed = new Set(ALLOWED.map(([from, to]) => `${from}>${to}`))
  for (const from of ORDER_STATUSES) {
    await t.test(`from ${from}`, async (t) => {
      const order = await orderIn(t, from)
      const expectedAllowed = ALLOWED.filter(([f]) => f === from).map(([, to]) => to)
      for (const to of ORDER_STATUSES) {
        if (to === from || allowed.has(`${from}>${to}`)) continue
        for (const ref of [order.id, order.orderNumber]) {
          const result = await setOrderStatus(app.database, ref, to)
          t.match(result, { ok: false, reason: 'forbidden', from }, `${from} → ${to} is forbidden`)
          if (!result.ok && result.reason === 'forbidden') t.same([...result.allowed].sort(), [...expectedAllowed].sort(), 'names what is allowed')
          t.equal(await statusSeen(app, order.id), from, 'status unchanged')
        }
      }
    })
  }
})

t.test('the examples of the brief, by number and by id', async (t) => {
  const cases: Array<[OrderStatus, OrderStatus]> = [['pending', 'shipped'], ['delivered', 'cancelled'], ['cancelled', 'confirmed'], ['shipped', 'cancelled']]
  for (const [from, to] of cases) {
    const order = await orderIn(t, from)
    t.match(await setOrderStatus(app.database, order.orderNumber, to), { ok: false, reason: 'forbidden' }, `${from} → ${to} by number`)
    t.match(await setOrderStatus(app.database, order.id, to), { ok: false, reason: 'forbidden' }, `${from} → ${to} by id`)
    t.equal(await statusSeen(app, order.id), from)
  }
})

t.test('an unknown order is not_found', async (t) => {
  for (const ref of [randomUUID(), '999999999', '999999999999999999', 'not-an-order', '', '-5']) {
    t.same(await setOrderStatus(app.database, ref, 'confirmed'), { ok: false, reason: 'not_found' }, JSON.stringify(ref))
  }
})

t.test('an upper-case GUID names the order', async (t) => {
  const order = await newOrder(t)
  t.match(await setOrderStatus(app.database, order.id.toUpperCase(), 'confirmed'), { ok: true, from: 'pending' })
  t.equal(await statusSeen(app, order.id), 'confirmed')
})

t.test('cancelling a live order gives back the units it took; a test order took none', async (t) => {
  const red = randomUUID()
  const shirt = { id: randomUUID(), name: 'Cancel Shirt', price: 9, isAvailable: true, variants: [{ id: randomUUID(), name: 'Colour', options: [{ id: red, name: 'Red' }] }], combinations: [{ id: randomUUID(), optionIds: [red], price: 9, quantity: 3, isAvailable: true }] }
  const mug = makeProduct({ name: 'Cancel Mug', quantity: 2 })
  const free = makeProduct({ name: 'Cancel Sticker', quantity: null })
  await importProducts(app, [shirt, mug, free])
  const combinationId = shirt.combinations[0]!.id
  const shown = async () => {
    // An operator's command tells no cache: instances see the change once its events are published.
    await publishChanges(app.database)
    await pollState(app)
    const read = async (id: string) => (await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(key) })).json<{ quantity: number | null, isAvailable: boolean }>()
    return { shirt: await read(shirt.id), mug: await read(mug.id), free: await read(free.id) }
  }
  const order = await created<Summary>(t, await postOrder(app, key, orderBody([line(mug, 1), line(shirt, 3, combinationId), line(mug, 1), line(free, 5)])))
  t.match(await shown(), { shirt: { quantity: 0, isAvailable: false }, mug: { quantity: 0, isAvailable: false }, free: { quantity: null } }, 'sold out')
  // Shipped and delivered orders keep their units; only cancelling gives them back.
  t.equal((await setOrderStatus(app.database, order.id, 'confirmed')).ok, true)
  t.match(await shown(), { shirt: { quantity: 0 }, mug: { quantity: 0 } }, 'confirming gives nothing back')
  t.equal((await setOrderStatus(app.database, order.orderNumber, 'cancelled')).ok, true)
  t.match(await shown(), { shirt: { quantity: 3, isAvailable: true }, mug: { quantity: 2, isAvailable: true }, free: { quantity: null } }, 'every unit back, untracked stock untouched')
  t.equal((await setOrderStatus(app.database, order.id, 'cancelled')).ok, false, 'a cancelled order cannot be cancelled again')
  t.match(await shown(), { shirt: { quantity: 3 }, mug: { quantity: 2 } }, 'so nothing is given back twice')

  const { key: testKey } = await makeKey(app, undefined, { mode: 'test' })
  const testOrder = await created<Summary>(t, await postOrder(app, testKey, orderBody([line(mug, 2)])))
  t.match(await shown(), { mug: { quantity: 2 } }, 'a test order takes nothing')
  t.equal((await setOrderStatus(app.database, testOrder.id, 'cancelled')).ok, true)
  t.match(await shown(), { mug: { quantity: 2 } }, 'so cancelling it gives nothing back')
})
