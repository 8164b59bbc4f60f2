// Webhooks in test mode: a test key's endpoint receives its test orders' events (created, and
// moved by the test status route) and never a live order's; a live key's endpoint never
// receives a test order's. Real receivers that check each signature.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../../db/client.ts'
import { authHeaders, buildTestApp, created, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep } from '../../helper.ts'
import { startReceiver, WEBHOOK_TEST_ENV } from '../../webhook-receiver.ts'

t.setTimeout(120_000)

t.test('each key\'s webhooks carry only its own mode\'s orders', async (t) => {
  const app = await buildTestApp(t, { env: { ...WEBHOOK_TEST_ENV, WEBHOOK_RETRY_SCHEDULE: '0.2', SHUTDOWN_TIMEOUT: '2000' } })
  await app.ready()
  const scopes = ['orders:create', 'orders:list', 'orders:find', 'webhooks:manage'] as const
  const live = await makeKey(app, [...scopes])
  const sandbox = await makeKey(app, [...scopes], { mode: 'test' })
  const lamp = makeProduct({ name: 'Hook Lamp', price: 2, quantity: 10 })
  await importProducts(app, [lamp])

  const receivers = { live: await startReceiver(t), test: await startReceiver(t) }
  const secrets: Record<string, string> = {}
  for (const [name, key] of [['live', live.key], ['test', sandbox.key]] as const) {
    const res = await app.inject({
      method: 'POST',
      url: '/external/v1/webhooks',
      headers: { ...authHeaders(key), 'content-type': 'application/json' },
      payload: JSON.stringify({ url: receivers[name].url, events: ['order.*'] })
    })
    t.equal(res.statusCode, 201, res.body)
    secrets[name] = res.json<{ secret: string }>().secret
  }

  const liveOrder = await created(t, await postOrder(app, live.key, orderBody([line(lamp, 1)])))
  const testOrder = await created(t, await postOrder(app, sandbox.key, orderBody([line(lamp, 1)])))
  const moved = await app.inject({
    method: 'POST',
    url: `/external/v1/test/orders/${testOrder.orderNumber}/status`,
    headers: { ...authHeaders(sandbox.key), 'content-type': 'application/json' },
    payload: JSON.stringify({ status: 'confirmed' })
  })
  t.equal(moved.statusCode, 200)

  await receivers.test.waitFor(2)
  await receivers.live.waitFor(1)
  // Time for anything that should not come to come anyway.
  await sleep(500)
  const seen = (name: 'live' | 'test') => receivers[name].received.map((r) => [r.json.type, r.json.data.resourceId, r.json.data.orderNumber])
  t.same(seen('test'), [
    ['order.created', testOrder.id, testOrder.orderNumber],
    ['order.status_changed', testOrder.id, testOrder.orderNumber]
  ], 'the test key\'s endpoint: its test order, created then moved')
  t.same(seen('live'), [['order.created', liveOrder.id, liveOrder.orderNumber]], 'the live key\'s endpoint: its live order only')
  for (const name of ['live', 'test'] as const) {
    t.ok(receivers[name].received.every((r) => receivers[name].verifies(r, secrets[name]!)), `${name}: signed with its endpoint's secret`)
  }
  const [row] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from webhook_deliveries`)
  t.equal(row!.n, 3, 'no delivery was even planned across modes')
})
