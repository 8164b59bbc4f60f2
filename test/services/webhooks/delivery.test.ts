// Webhook deliveries end to end (decisions §11), to real HTTP receivers that check each
// signature with the `standardwebhooks` package: the shape and headers, retries and their
// end, redirects, slow receivers, huge answers, secret rotation, auto-disable, redelivery,
// the events filter and the feed's visibility rules, and the address check at delivery.
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../app.ts'
import { execute } from '../../../db/client.ts'
import { recordEvents } from '../../../db/events.ts'
import { claimDeliveries, recordOutcomes } from '../../../db/webhooks.ts'
import { SCOPES, type Scope } from '../../../lib/api-key-secret.ts'
import { WebhookPayload } from '../../../schemas/webhooks.ts'
import { forgetOldDeliveries } from '../../../services/webhooks/deliveries.ts'
import type { ResolvedAddress } from '../../../services/webhooks/url-policy.ts'
import {
  authHeaders, buildTestApp, created, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, until, type TestAppOptions
} from '../../helper.ts'
import { startReceiver, WEBHOOK_TEST_ENV, type Receiver } from '../../webhook-receiver.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]
interface Endpoint { id: string, url: string, status: string, disabledReason: string | null, secret?: string }
interface Delivery { eventId: string, type: string, status: string, attempts: number, lastAttemptAt: string | null, lastResponseStatus: number | null, nextAttemptAt: string | null }
interface DeliveryPage { items: Delivery[], page: number, pageSize: number, total: number, nextCursor: string | null }

t.setTimeout(240_000)

const BASE_ENV = {
  ...WEBHOOK_TEST_ENV,
  WEBHOOK_RETRY_SCHEDULE: '0.2,0.2',
  SHUTDOWN_TIMEOUT: '2000'
}

async function testApp (t: T, env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<App> {
  const app = await buildTestApp(t, { env: { ...BASE_ENV, ...env }, ...options })
  await app.ready()
  return app
}

function api (app: App, key: string) {
  const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) => app.inject({
    method,
    url: `/external/v1${url}`,
    headers: { ...authHeaders(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) })
  })
  return {
    send,
    create: async (body: Record<string, unknown>): Promise<Endpoint> => {
      const res = await send('POST', '/webhooks', body)
      if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`)
      return res.json<Endpoint>()
    },
    endpoint: async (id: string) => (await send('GET', `/webhooks/${id}`)).json<Endpoint>(),
    deliveries: async (id: string, query = '') => {
      const res = await send('GET', `/webhooks/${id}/deliveries${query}`)
      if (res.statusCode !== 200) throw new Error(`deliveries: ${res.statusCode} ${res.body}`)
      return res.json<DeliveryPage>()
    }
  }
}

/** A product event written as an import would: the simplest event a test can make. */
async function productEvent (app: App, type: 'product.created' | 'product.updated' = 'product.updated'): Promise<string> {
  const resourceId = crypto.randomUUID()
  await recordEvents(app.database.db, [{ type, resourceId }])
  return resourceId
}

const everyScope = [...SCOPES] as Scope[]

t.test('a delivery: Standard Webhooks headers, the signature, the feed\'s event id, the body', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url })
  const mug = makeProduct({ name: 'Webhook Mug', quantity: 50 })
  await importProducts(app, [mug])
  // The import's own event came before the endpoint's events: wait for it to go by.
  const before = (await receiver.waitFor(1)).length
  const order = await created(t, await postOrder(app, key, orderBody([line(mug, 2)])))
  const got = await receiver.waitFor(before + 2)
  const orderCreated = got.find((r) => r.json.type === 'order.created')!
  t.ok(orderCreated, 'order.created arrived')
  t.same(orderCreated.json.data, { id: orderCreated.id, resourceId: order.id, orderNumber: order.orderNumber, status: 'pending' })
  t.match(orderCreated.json.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.same(Object.keys(orderCreated.json).sort(), ['data', 'timestamp', 'type'])
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  const documented = ajv.compile(WebhookPayload)
  for (const hit of got) t.ok(documented(hit.json), `${hit.json.type}: the body is the documented WebhookPayload`, { errors: documented.errors })
  t.match(orderCreated.id, /^evt_\d+$/)
  t.equal(orderCreated.headers['content-type'], 'application/json')
  t.ok(Math.abs(Number(orderCreated.timestamp) - Date.now() / 1000) < 60, 'webhook-timestamp: Unix seconds of the attempt')
  t.match(orderCreated.signature, /^v1,[A-Za-z0-9+/]+=*$/, 'one signature')
  t.ok(receiver.verifies(orderCreated, endpoint.secret!), 'the signature verifies with the endpoint\'s secret (standardwebhooks)')
  t.notOk(receiver.verifies(orderCreated, 'whsec_' + Buffer.alloc(32, 7).toString('base64')), 'and not with another secret')
  t.notOk(receiver.verifies({ ...orderCreated, body: orderCreated.body.replace('pending', 'shipped') }, endpoint.secret!), 'nor for an altered body')
  const stock = got.find((r) => r.json.type === 'product.updated' && r.json.data.resourceId === mug.id)
  t.ok(stock, 'the stock change arrived too')

  // The same ids as the changes feed.
  const feed = (await client.send('GET', '/changes?limit=500')).json<{ items: Array<{ id: string, type: string, resourceId: string }> }>()
  const inFeed = feed.items.find((e) => e.type === 'order.created' && e.resourceId === order.id)
  t.equal(inFeed?.id, orderCreated.id, 'webhook-id is the feed\'s event id')

  const page = await until('the delivery to be recorded', async () => {
    const p = await client.deliveries(endpoint.id)
    return p.items.find((d) => d.eventId === orderCreated.id)?.status === 'succeeded' ? p : undefined
  })
  const delivery = page.items.find((d) => d.eventId === orderCreated.id)!
  t.match(delivery, { type: 'order.created', status: 'succeeded', attempts: 1, lastResponseStatus: 200, nextAttemptAt: null })
  t.type(delivery.lastAttemptAt, 'string')
  const ids = page.items.map((d) => Number(d.eventId.slice(4)))
  t.same(ids, [...ids].sort((a, b) => b - a), 'newest first')
  t.equal(receiver.hits(orderCreated.id).length, 1, 'delivered once')
})

t.test('a failing receiver: retried on the schedule with the same id and body, then failed; redelivery makes a new attempt', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond((_req, res) => { res.writeHead(500).end('nope') })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  const hits = await receiver.waitFor(3)
  await sleep(800)
  t.equal(receiver.received.length, 3, 'one attempt and the two retries of the schedule, no more')
  t.equal(new Set(hits.map((h) => h.id)).size, 1, 'the same webhook-id on every attempt')
  t.equal(new Set(hits.map((h) => h.body)).size, 1, 'and the same body')
  for (const [i, hit] of hits.entries()) t.ok(receiver.verifies(hit, endpoint.secret!), `attempt ${i + 1} signed`)
  const gaps = hits.slice(1).map((h, i) => h.at - hits[i]!.at)
  t.ok(gaps.every((gap) => gap >= 150), `retried after about 0.2 s (± 20%), not at once: ${gaps.join(', ')} ms`)
  const failed = await until('the delivery to fail', async () => {
    const d = (await client.deliveries(endpoint.id)).items[0]
    return d?.status === 'failed' ? d : undefined
  })
  t.match(failed, { status: 'failed', attempts: 3, lastResponseStatus: 500, nextAttemptAt: null })

  receiver.respond((_req, res) => { res.writeHead(204).end() })
  const res = await client.send('POST', `/webhooks/${endpoint.id}/deliveries/${failed.eventId}/redeliver`)
  t.equal(res.statusCode, 202)
  t.equal(res.body, '')
  await receiver.waitFor(4)
  t.equal(receiver.received[3]!.id, failed.eventId, 'redelivered with the same id')
  const done = await until('the redelivery to succeed', async () => {
    const d = (await client.deliveries(endpoint.id)).items[0]
    return d?.status === 'succeeded' ? d : undefined
  })
  t.match(done, { attempts: 4, lastResponseStatus: 204 })
  await sleep(300)
  t.equal(receiver.received.length, 4, 'no attempt after the success')
})

t.test('a receiver that fails, then recovers: delivered on a retry', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  let calls = 0
  receiver.respond((_req, res) => { res.writeHead(++calls === 1 ? 503 : 200).end() })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  await receiver.waitFor(2)
  const done = await until('success', async () => {
    const d = (await client.deliveries(endpoint.id)).items[0]
    return d?.status === 'succeeded' ? d : undefined
  })
  t.match(done, { attempts: 2, lastResponseStatus: 200 })
})

t.test('a redirect is not followed: it counts as a failure', async (t) => {
  const app = await testApp(t, { WEBHOOK_RETRY_SCHEDULE: '3600' })
  const { key } = await makeKey(app, everyScope)
  const target = await startReceiver(t)
  const receiver = await startReceiver(t)
  receiver.respond((_req, res) => { res.writeHead(307, { location: target.url }).end() })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  await receiver.waitFor(1)
  const d = await until('the failed attempt', async () => {
    const item = (await client.deliveries(endpoint.id)).items[0]
    return item?.attempts === 1 ? item : undefined
  })
  t.match(d, { status: 'pending', lastResponseStatus: 307 })
  t.type(d.nextAttemptAt, 'string', 'a retry is due')
  await sleep(300)
  t.equal(target.received.length, 0, 'the redirect target was never called')
})

t.test('a slow receiver: no answer within the timeout is a failure', async (t) => {
  const app = await testApp(t, { WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_RETRY_SCHEDULE: '3600' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond(async (_req, res) => {
    await sleep(3000)
    if (!res.destroyed) res.writeHead(200).end()
  })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  const started = Date.now()
  await receiver.waitFor(1)
  const d = await until('the timed-out attempt', async () => {
    const item = (await client.deliveries(endpoint.id)).items[0]
    return item?.attempts === 1 ? item : undefined
  })
  t.match(d, { status: 'pending', lastResponseStatus: null })
  t.ok(Date.now() - started < 2800, 'recorded before the receiver would have answered')
})

t.test('a huge answer is read only up to the limit, then the connection is dropped', async (t) => {
  const app = await testApp(t, { WEBHOOK_MAX_RESPONSE_BYTES: '4096', WEBHOOK_TIMEOUT_MS: '20000' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  let sent = 0
  let closedAt = 0
  receiver.respond(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.on('close', () => { closedAt = Date.now() })
    const chunk = Buffer.alloc(64 * 1024, 120)
    // An endless answer: only the client dropping the connection ends it.
    while (!res.destroyed && !res.writableEnded && sent < 512 * 1024 * 1024) {
      if (!res.write(chunk)) await new Promise((resolve) => { res.once('drain', resolve); res.once('close', resolve) })
      sent += chunk.length
    }
  })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  const started = Date.now()
  await receiver.waitFor(1)
  const d = await until('the attempt', async () => {
    const item = (await client.deliveries(endpoint.id)).items[0]
    return item?.status === 'succeeded' ? item : undefined
  }, 10_000)
  t.match(d, { attempts: 1, lastResponseStatus: 200 })
  await until('the connection to close', async () => closedAt > 0 ? true : undefined, 5000)
  t.ok(closedAt - started < 10_000, 'dropped long before the timeout')
  t.ok(sent < 64 * 1024 * 1024, `the receiver could write only ${sent} bytes`)
})

t.test('a rotated secret: both sign for the overlap, each verifying on its own; then only the new one', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  await receiver.waitFor(1)
  const rotated = (await client.send('POST', `/webhooks/${endpoint.id}/rotate-secret`)).json<Endpoint>()
  await productEvent(app)
  const [, during] = await receiver.waitFor(2)
  t.equal(during!.signature.split(' ').length, 2, 'two signatures, space-separated')
  t.ok(receiver.verifies(during!, rotated.secret!), 'the new secret verifies')
  t.ok(receiver.verifies(during!, endpoint.secret!), 'the previous secret verifies')
  const [first, second] = during!.signature.split(' ')
  t.ok(receiver.verifies({ ...during!, signature: first! }, rotated.secret!), 'the first signature is the new secret\'s')
  t.ok(receiver.verifies({ ...during!, signature: second! }, endpoint.secret!), 'the second the previous secret\'s')
  t.notOk(receiver.verifies({ ...during!, signature: first! }, endpoint.secret!))

  // The 24 hours are over.
  await execute(app.database.db, sql`update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${endpoint.id}::uuid`)
  await productEvent(app)
  const [, , after] = await receiver.waitFor(3)
  t.equal(after!.signature.split(' ').length, 1, 'one signature again')
  t.ok(receiver.verifies(after!, rotated.secret!))
  t.notOk(receiver.verifies(after!, endpoint.secret!), 'the previous secret no longer signs')
})

t.test('an endpoint failing with no success for the window is disabled, says why, and resumes when enabled', async (t) => {
  const app = await testApp(t, { WEBHOOK_DISABLE_AFTER_MS: '800', WEBHOOK_RETRY_SCHEDULE: '0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond((_req, res) => { res.writeHead(500).end() })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  const disabled = await until('the endpoint to be disabled', async () => {
    const e = await client.endpoint(endpoint.id)
    return e.status === 'disabled' ? e : undefined
  })
  t.match(disabled.disabledReason, /no delivery succeeded for .* while deliveries failed/i)
  await sleep(150)
  const hits = receiver.received.length
  t.ok(hits >= 4, `it failed for the whole window first (${hits} attempts)`)
  await productEvent(app)
  await sleep(600)
  t.equal(receiver.received.length, hits, 'a disabled endpoint receives nothing')
  const waiting = (await client.deliveries(endpoint.id)).items
  t.equal(waiting.length, 1, 'nothing is queued for a disabled endpoint')
  t.equal(waiting[0]!.status, 'pending', 'what was queued waits')

  receiver.respond((_req, res) => { res.writeHead(200).end() })
  const enabled = (await client.send('PATCH', `/webhooks/${endpoint.id}`, { status: 'enabled' })).json<Endpoint>()
  t.match(enabled, { status: 'enabled', disabledReason: null })
  await until('the waiting delivery to succeed', async () => {
    const items = (await client.deliveries(endpoint.id)).items
    return items[0]?.status === 'succeeded' ? true : undefined
  })
  t.equal(receiver.received.at(-1)!.id, waiting[0]!.eventId, 'what waited was delivered once enabled')
})

t.test('events filter and the feed\'s visibility: a key gets only what its scopes let it see in the feed', async (t) => {
  const app = await testApp(t)
  const mug = makeProduct({ name: 'Filter Mug', quantity: 1000 })
  await importProducts(app, [mug])
  await sleep(100)
  // No orders:list: its own orders' events are not its to see.
  const productsOnly = await makeKey(app, ['products:list', 'orders:create', 'webhooks:manage'])
  // No products:list: catalogue events are not its to see.
  const ordersOnly = await makeKey(app, ['orders:list', 'orders:create', 'webhooks:manage'])
  const ordersAndProducts = await makeKey(app, ['orders:list', 'orders:create', 'products:list', 'webhooks:manage'])
  const noScope = await makeKey(app, ['orders:create', 'webhooks:manage'])
  const receivers = {
    productsOnly: await startReceiver(t),
    ordersOnly: await startReceiver(t),
    createdOnly: await startReceiver(t),
    orderStar: await startReceiver(t),
    noScope: await startReceiver(t)
  }
  await api(app, productsOnly.key).create({ url: receivers.productsOnly.url })
  await api(app, ordersOnly.key).create({ url: receivers.ordersOnly.url })
  await api(app, ordersAndProducts.key).create({ url: receivers.createdOnly.url, events: ['product.created'] })
  await api(app, ordersAndProducts.key).create({ url: receivers.orderStar.url, events: ['order.*'] })
  await api(app, noScope.key).create({ url: receivers.noScope.url })

  const a = await created(t, await postOrder(app, productsOnly.key, orderBody([line(mug, 1)])))
  const b = await created(t, await postOrder(app, ordersOnly.key, orderBody([line(mug, 1)])))
  const c = await created(t, await postOrder(app, ordersAndProducts.key, orderBody([line(mug, 1)])))
  const fresh = makeProduct({ name: 'Filter Lamp' })
  await importProducts(app, [fresh])
  // A marker every catalogue reader gets last: once it arrived, everything before it did.
  const marker = await productEvent(app, 'product.created')
  await until('the markers', async () =>
    [receivers.productsOnly, receivers.createdOnly].every((r) => r.received.some((x) => x.json.data.resourceId === marker)) ? true : undefined)
  await until('the order events', async () =>
    receivers.ordersOnly.received.length >= 1 && receivers.orderStar.received.length >= 1 ? true : undefined)
  await sleep(500)
  const seen = (r: Receiver) => r.received.map((x) => `${x.json.type} ${x.json.data.resourceId}`).sort()

  t.same(seen(receivers.productsOnly), [
    `product.created ${fresh.id}`, `product.created ${marker}`,
    `product.updated ${mug.id}`, `product.updated ${mug.id}`, `product.updated ${mug.id}`
  ].sort(), 'products:list without orders:list: every catalogue event, not even its own order')
  t.same(seen(receivers.ordersOnly), [`order.created ${b.id}`], 'orders:list without products:list: its own order only')
  t.same(seen(receivers.createdOnly), [`product.created ${fresh.id}`, `product.created ${marker}`].sort(), 'the filter product.created')
  t.same(seen(receivers.orderStar), [`order.created ${c.id}`], 'order.*: its own order, never another key\'s')
  t.same(seen(receivers.noScope), [], 'neither scope: nothing')
  t.notOk(Object.values(receivers).some((r) => r.received.some((x) => x.json.data.resourceId === a.id)), 'nobody got the order of the key without orders:list')
})

t.test('a host that resolves to a private address by delivery time is refused at delivery', async (t) => {
  // DNS rebinding: public when the endpoint is saved, loopback when it is called.
  let answer = '93.184.216.34'
  const resolver = async (hostname: string): Promise<ResolvedAddress[]> =>
    hostname === 'rebind.test' || hostname === 'allowed.test' ? [{ address: hostname === 'allowed.test' ? '127.0.0.1' : answer, family: 4 }] : []
  const app = await testApp(t, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1,allowed.test', WEBHOOK_RETRY_SCHEDULE: '3600' }, { webhookResolver: resolver })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const control = await startReceiver(t)
  const client = api(app, key)
  const rebinding = await client.create({ url: `http://rebind.test:${receiver.port}/hook`, events: ['product.*'] })
  await client.create({ url: `http://allowed.test:${control.port}/hook`, events: ['product.*'] })
  answer = '127.0.0.1'
  await productEvent(app)
  await control.waitFor(1)
  const d = await until('the refused attempt', async () => {
    const item = (await client.deliveries(rebinding.id)).items[0]
    return item?.attempts === 1 ? item : undefined
  })
  t.match(d, { status: 'pending', lastResponseStatus: null }, 'a failed attempt, no answer')
  t.equal(receiver.received.length, 0, 'the loopback receiver was never called')
  t.equal(receiver.connections(), 0, 'refused in the connection\'s own lookup: not even a connection was opened')
  t.equal(control.received.length, 1, 'while an allowed host resolving to it was (the lookup path works)')
})

t.test('deliveries list newest first, 25 a page, with a cursor', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.updated'] })
  for (let i = 0; i < 30; i++) await productEvent(app)
  await receiver.waitFor(30)
  const first = await client.deliveries(endpoint.id)
  t.equal(first.items.length, 25)
  t.equal(first.total, 30)
  t.type(first.nextCursor, 'string')
  const second = await client.deliveries(endpoint.id, `?cursor=${encodeURIComponent(first.nextCursor!)}`)
  t.equal(second.items.length, 5)
  t.equal(second.page, 2)
  t.equal(second.nextCursor, null)
  const ids = [...first.items, ...second.items].map((d) => Number(d.eventId.slice(4)))
  t.same(ids, [...ids].sort((x, y) => y - x), 'newest first across pages')
  t.equal(new Set(ids).size, 30)
  t.same(ids.map((id) => `evt_${id}`).sort(), receiver.received.map((r) => r.id).sort(), 'exactly what was delivered')
  const page2 = await client.deliveries(endpoint.id, '?page=2')
  t.same(page2.items, second.items, 'page=2 is the same page')
  const other = await makeKey(app, ['webhooks:manage'])
  const theirs = await api(app, other.key).create({ url: receiver.url })
  const res = await api(app, other.key).send('GET', `/webhooks/${theirs.id}/deliveries?cursor=${encodeURIComponent(first.nextCursor!)}`)
  t.equal(res.statusCode, 400, 'a cursor of another endpoint is refused')
})

t.test('deleting an endpoint deletes its deliveries', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  await productEvent(app)
  await receiver.waitFor(1)
  t.equal((await client.send('DELETE', `/webhooks/${endpoint.id}`)).statusCode, 204)
  const [row] = await execute<{ count: number }>(app.database.db, sql`select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid`)
  t.equal(row!.count, 0)
})

t.test('metrics: attempts by outcome, and the age of the oldest due delivery', async (t) => {
  // The worker does not poll by itself here: publishing wakes it, then the test says when it claims.
  // The retry is due only a little later: the claim made as the first attempt ends finds nothing.
  const app = await testApp(t, { WEBHOOK_POLL_MS: '3600000', WEBHOOK_RETRY_SCHEDULE: '0.5' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  receiver.respond((_req, res) => { res.writeHead(500).end() })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  const metric = async (pattern: RegExp) => Number(pattern.exec((await app.inject({ url: '/metrics' })).body)?.[1] ?? NaN)
  const AGE = /^storefront_webhook_oldest_due_seconds ([\d.e+-]+)$/m
  t.equal(await metric(AGE), 0, 'nothing waits')
  await productEvent(app)
  // Claimed as it is published (the publisher wakes this instance's worker), not at a poll.
  await until('the first attempt', async () => (await client.deliveries(endpoint.id)).items[0]?.attempts === 1 ? true : undefined)
  t.equal(await metric(/^storefront_webhook_attempts_total\{outcome="retrying"\} (\d+)$/m), 1, 'a failed attempt to retry')
  await until('the retry to be due', async () => (await client.deliveries(endpoint.id)).items[0]?.nextAttemptAt! <= new Date().toISOString() ? true : undefined)
  await sleep(1200)
  t.ok(await metric(AGE) >= 1, 'a due delivery nobody claimed: its age')
  await app.webhooks.worker.poll()
  await until('the delivery to fail', async () => (await client.deliveries(endpoint.id)).items[0]?.status === 'failed' ? true : undefined)
  t.equal(await metric(/^storefront_webhook_attempts_total\{outcome="failed"\} (\d+)$/m), 1, 'the last retry failed')
  t.equal(await metric(AGE), 0, 'nothing waits any more')
  receiver.respond((_req, res) => { res.writeHead(200).end() })
  await client.send('POST', `/webhooks/${endpoint.id}/deliveries/${(await client.deliveries(endpoint.id)).items[0]!.eventId}/redeliver`)
  await app.webhooks.worker.poll()
  await until('the redelivery', async () => (await client.deliveries(endpoint.id)).items[0]?.status === 'succeeded' ? true : undefined)
  t.equal(await metric(/^storefront_webhook_attempts_total\{outcome="succeeded"\} (\d+)$/m), 1, 'a success')
})

t.test('a burst is delivered at the receivers\' pace, not one claim per poll: the worker claims again as attempts end', async (t) => {
  // The timer never fires here; one claim starts it, and 4 at a time must carry all 40.
  const app = await testApp(t, { WEBHOOK_POLL_MS: '3600000', WEBHOOK_CONCURRENCY: '4' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  const N = 40
  for (let i = 0; i < N; i++) await productEvent(app)
  await until('the deliveries to be queued', async () => (await client.deliveries(endpoint.id)).total === N ? true : undefined)
  const started = Date.now()
  await app.webhooks.worker.poll()
  await receiver.waitFor(N, 10_000)
  t.ok(Date.now() - started < 10_000, `all ${N} delivered after one claim, in ${Date.now() - started} ms`)
  await until('every outcome recorded', async () => {
    const [row] = await execute<{ count: number }>(app.database.db, sql`select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid and status = 'succeeded'`)
    return row!.count === N ? true : undefined
  })
  t.equal(new Set(receiver.received.map((r) => r.id)).size, N, 'each once')
})

t.test('by default an instance keeps 256 attempts in flight at once, and no more: a slow round trip does not cap its rate at 64 a round trip', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  // Every answer waits until the test lets them all go.
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  receiver.respond(async (_req, res) => {
    await released
    res.writeHead(204).end()
  })
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  const N = 300
  await recordEvents(app.database.db, Array.from({ length: N }, () => ({ type: 'product.updated' as const, resourceId: crypto.randomUUID() })))
  await until('256 attempts waiting at the receiver', () => receiver.received.length >= 256 ? true : undefined, 30_000)
  await sleep(500)
  t.equal(receiver.received.length, 256, 'no attempt beyond the 256 while they all wait')
  t.equal(app.webhooks.worker.inFlight, 256, 'the worker counts 256 in flight')
  t.ok(receiver.connections() <= 256, `one connection an attempt at most (${receiver.connections()})`)
  release()
  await receiver.waitFor(N, 30_000)
  await until('every outcome recorded', async () => {
    const [row] = await execute<{ count: number }>(app.database.db, sql`select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid and status = 'succeeded'`)
    return row!.count === N ? true : undefined
  }, 30_000)
  t.equal(new Set(receiver.received.map((r) => r.id)).size, N, 'each once')
})

t.test('successes recorded in one batch: only rows whose lease still holds; the failing endpoint cleared', async (t) => {
  const app = await testApp(t, { WEBHOOK_POLL_MS: '3600000' })
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const client = api(app, key)
  const endpoint = await client.create({ url: receiver.url, events: ['product.*'] })
  // The test claims: the worker, woken by what this instance publishes, would claim first.
  await app.webhooks.worker.stop(0)
  await productEvent(app)
  await productEvent(app)
  await until('the deliveries to be queued', async () => (await client.deliveries(endpoint.id)).total === 2 ? true : undefined)
  const { db } = app.database
  const [kept, lost] = await claimDeliveries(db, 10, 60_000)
  t.ok(kept !== undefined && lost !== undefined, 'both claimed')
  // Another instance holds the second now (as after this one's lease ended).
  await execute(db, sql`update webhook_deliveries set lease_until = now() + interval '1 hour' where id = ${lost!.id}::bigint`)
  await execute(db, sql`update webhook_endpoints set failing_since = now() - interval '1 day', last_success_at = now() where id = ${endpoint.id}::uuid`)
  const { recorded } = await recordOutcomes(db, [kept!, lost!].map((claim) => ({ claim, ok: true, status: 200, at: new Date(), nextAttemptAt: null })), { disableAfterMs: 60_000, reason: 'x' })
  t.same([...recorded], [kept!.id], 'only the one whose lease held')
  const rows = await execute<{ id: string, status: string, attempts: number, leased: boolean }>(db, sql`
    select id::text, status, attempts, lease_until is not null as leased from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid order by id`)
  const byId = new Map(rows.map((r) => [r.id, r]))
  t.match(byId.get(kept!.id), { status: 'succeeded', attempts: 1, leased: false })
  t.match(byId.get(lost!.id), { status: 'pending', attempts: 0, leased: true }, 'the other holder\'s row untouched')
  const [ep] = await execute<{ failing: boolean }>(db, sql`select failing_since is not null as failing from webhook_endpoints where id = ${endpoint.id}::uuid`)
  t.equal(ep!.failing, false, 'a success clears failing_since even with a fresh last_success_at')
})

t.test('finished deliveries are forgotten after the retention, pending ones never', async (t) => {
  const app = await testApp(t)
  const { key } = await makeKey(app, everyScope)
  const receiver = await startReceiver(t)
  const endpoint = await api(app, key).create({ url: receiver.url, events: ['product.*'] })
  const [old, oldPending, recent] = [await productEvent(app), await productEvent(app), await productEvent(app)]
  await receiver.waitFor(3)
  await until('all three recorded', async () => {
    const [row] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from webhook_deliveries
      where endpoint_id = ${endpoint.id}::uuid and status = 'succeeded'`)
    return row!.n === 3 ? true : undefined
  }, 10_000)
  const backdate = (resourceId: string) => execute(app.database.db, sql`update webhook_deliveries set created_at = now() - interval '31 days'
    where endpoint_id = ${endpoint.id}::uuid and resource_id = ${resourceId}::uuid`)
  await backdate(old)
  await backdate(oldPending)
  // Waiting for a retry far ahead: pending, whatever its age.
  await execute(app.database.db, sql`update webhook_deliveries set status = 'pending', next_attempt_at = now() + interval '1 day'
    where resource_id = ${oldPending}::uuid`)

  // A batch of one: the loop goes on until a batch comes back short.
  t.equal(await forgetOldDeliveries(app.database, 30, new Date(), 1), 1, 'one delivery forgotten')
  const kept = await execute<{ resource_id: string }>(app.database.db, sql`select resource_id::text from webhook_deliveries where endpoint_id = ${endpoint.id}::uuid`)
  t.same(kept.map((r) => r.resource_id).sort(), [oldPending, recent].sort(), 'the pending one and the recent one stay')
})
