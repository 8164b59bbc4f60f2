// POST /external/v1/test/orders/{orderNumberOrId}/status: a test key moves its own test orders
// along the operator's transitions, with the operator's event; every other caller is refused.
import t from 'tap'
import { SCOPES } from '../../../lib/api-key-secret.ts'
import { publishChanges } from '../../../services/changes.ts'
import {
  authHeaders, buildTestApp, created, expectError, getJson, importProducts, line, makeKey, makeProduct, orderBody, postOrder, UNLIMITED, type FullOrder
} from '../../helper.ts'

const app = await buildTestApp(t, { env: { ...UNLIMITED, READ_SETTLE_MS: '0', EVENT_PUBLISH_MS: '3600000' } })
const live = await makeKey(app)
const sandbox = await makeKey(app, undefined, { mode: 'test' })
const otherSandbox = await makeKey(app, undefined, { mode: 'test', name: 'another sandbox' })
const lamp = makeProduct({ name: 'Status Lamp', price: 4, quantity: 3 })
await importProducts(app, [lamp])

function move (key: string, which: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return app.inject({
    method: 'POST',
    url: `/external/v1/test/orders/${which}/status`,
    headers: { ...authHeaders(key), ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body)
  })
}

t.test('a test order moves along every transition, answering the order with its items, and writes the operator\'s event', async (t) => {
  const placed = await created<FullOrder>(t, await postOrder(app, sandbox.key, orderBody([line(lamp, 2)])))
  await publishChanges(app.database)
  const start = (await getJson(app, sandbox.key, '/external/v1/changes?limit=0')).json<{ nextCursor: string }>().nextCursor
  const steps = [['confirmed', placed.orderNumber], ['processing', placed.id], ['shipped', placed.orderNumber.toLowerCase()], ['delivered', placed.id.toUpperCase()]] as const
  let previous = 'pending'
  for (const [status, which] of steps) {
    const res = await move(sandbox.key, which, { status })
    t.equal(res.statusCode, 200, `${previous} → ${status}: ${res.body}`)
    const moved = res.json<FullOrder & { updatedAt: string }>()
    t.match(moved, { id: placed.id, orderNumber: placed.orderNumber, mode: 'test', status, items: [{ productId: lamp.id, quantity: 2 }] })
    t.equal(res.headers['cache-control'], 'no-store')
    previous = status
  }
  const got = (await getJson(app, sandbox.key, `/external/v1/orders/${placed.id}`)).json<FullOrder>()
  t.equal(got.status, 'delivered', 'the order is where it was moved')

  await publishChanges(app.database)
  const events = (await getJson(app, sandbox.key, `/external/v1/changes?after=${start}`)).json<{ items: Array<{ type: string, resourceId: string, data: unknown }> }>().items
  t.same(events.map((e) => [e.type, e.resourceId, e.data]), [
    ['order.status_changed', placed.id, { orderNumber: placed.orderNumber, status: 'confirmed', previousStatus: 'pending' }],
    ['order.status_changed', placed.id, { orderNumber: placed.orderNumber, status: 'processing', previousStatus: 'confirmed' }],
    ['order.status_changed', placed.id, { orderNumber: placed.orderNumber, status: 'shipped', previousStatus: 'processing' }],
    ['order.status_changed', placed.id, { orderNumber: placed.orderNumber, status: 'delivered', previousStatus: 'shipped' }]
  ], 'one order.status_changed per move, in its key\'s feed')
  const liveFeed = (await getJson(app, live.key, '/external/v1/changes')).json<{ items: Array<{ resourceId: string }> }>().items
  t.notOk(liveFeed.some((e) => e.resourceId === placed.id), 'none in a live key\'s feed')
  const { quantity } = (await getJson(app, live.key, `/external/v1/products/${lamp.id}`)).json<{ quantity: number }>()
  t.equal(quantity, 3, 'a test order took no stock, whatever its status')
})

t.test('a transition the operator could not make: 400 invalid_status_transition, nothing changes', async (t) => {
  const placed = await created<FullOrder>(t, await postOrder(app, sandbox.key, orderBody([line(lamp, 1)])))
  const refused = await move(sandbox.key, placed.orderNumber, { status: 'shipped' })
  expectError(t, refused, 400, 'invalid_status_transition', { message: /pending: it cannot go to shipped; it can go to confirmed or cancelled/ })
  expectError(t, await move(sandbox.key, placed.orderNumber, { status: 'pending' }), 400, 'invalid_status_transition')
  t.equal((await move(sandbox.key, placed.orderNumber, { status: 'cancelled' })).statusCode, 200)
  expectError(t, await move(sandbox.key, placed.orderNumber, { status: 'confirmed' }), 400, 'invalid_status_transition', { message: /cancelled.*cannot change any more/ })
  t.equal((await getJson(app, sandbox.key, `/external/v1/orders/${placed.id}`)).json<FullOrder>().status, 'cancelled')
})

t.test('a live key: 403 test_mode_only, even for its own order, which does not move', async (t) => {
  const mine = await created<FullOrder>(t, await postOrder(app, live.key, orderBody([line(lamp, 1)])))
  expectError(t, await move(live.key, mine.orderNumber, { status: 'confirmed' }), 403, 'test_mode_only')
  expectError(t, await move(live.key, mine.id, { status: 'confirmed' }), 403, 'test_mode_only')
  expectError(t, await move(live.key, 'T100001', { status: 'confirmed' }), 403, 'test_mode_only')
  t.equal((await getJson(app, live.key, `/external/v1/orders/${mine.id}`)).json<FullOrder>().status, 'pending')
})

t.test('another key\'s order, a live order or no order at all: 404 order_not_found', async (t) => {
  const theirs = await created<FullOrder>(t, await postOrder(app, otherSandbox.key, orderBody([line(lamp, 1)])))
  const liveOne = await created<FullOrder>(t, await postOrder(app, live.key, orderBody([line(lamp, 1)])))
  for (const which of [theirs.orderNumber, theirs.id, liveOne.orderNumber, liveOne.id, 'T999999999', crypto.randomUUID(), 'not-an-order']) {
    expectError(t, await move(sandbox.key, which, { status: 'confirmed' }), 404, 'order_not_found')
  }
  t.equal((await getJson(app, otherSandbox.key, `/external/v1/orders/${theirs.id}`)).json<FullOrder>().status, 'pending', 'their order did not move')
  t.equal((await getJson(app, live.key, `/external/v1/orders/${liveOne.id}`)).json<FullOrder>().status, 'pending')
})

t.test('bad requests: validation_failed, invalid_json, unsupported_media_type; the scope is orders:create', async (t) => {
  const placed = await created<FullOrder>(t, await postOrder(app, sandbox.key, orderBody([line(lamp, 1)])))
  expectError(t, await move(sandbox.key, placed.id, { status: 'shipping' }), 400, 'validation_failed', { details: true })
  expectError(t, await move(sandbox.key, placed.id, {}), 400, 'validation_failed', { details: true })
  expectError(t, await move(sandbox.key, placed.id, '{"status":'), 400, 'invalid_json')
  expectError(t, await move(sandbox.key, placed.id, 'status=confirmed', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
  const { key: readOnly } = await makeKey(app, SCOPES.filter((s) => s !== 'orders:create'), { mode: 'test' })
  expectError(t, await move(readOnly, placed.id, { status: 'confirmed' }), 403, 'insufficient_scope', { message: /orders:create/ })
  t.equal((await getJson(app, sandbox.key, `/external/v1/orders/${placed.id}`)).json<FullOrder>().status, 'pending', 'nothing moved')
})
