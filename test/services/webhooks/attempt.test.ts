// Delivery attempts over kept-alive connections, to real HTTP receivers: one connection
// carries an endpoint's deliveries one after the other, and every new socket is checked by
// the URL policy again, so a connection the policy once allowed gives no pass to the next.
import t from 'tap'
import { DeliveryClient } from '../../../services/webhooks/attempt.ts'
import { WebhookUrlPolicy } from '../../../services/webhooks/url-policy.ts'
import { startReceiver } from '../../webhook-receiver.ts'

/** A policy whose allowance of its listed hosts can be withdrawn, as if the host's address had moved. */
class SwitchablePolicy extends WebhookUrlPolicy {
  allowing = true
  override isAllowedHost (url: URL): boolean {
    return this.allowing && super.isAllowedHost(url)
  }
}

const OPTIONS = { timeoutMs: 2000, maxResponseBytes: 1024 }
// The pool frees a connection a tick after its answer ends; the worker's next attempt to an
// endpoint comes a claim (a database round trip) later, so each send here waits that tick.
const send = async (client: DeliveryClient, url: string, n: number) => {
  await new Promise(setImmediate)
  return client.attempt({ url, headers: { 'content-type': 'application/json', 'webhook-id': `evt_${n}` }, body: `{"n":${n}}` }, OPTIONS)
}

t.test('one connection carries an endpoint\'s deliveries one after the other', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  receiver.respond((_req, res) => { res.writeHead(204).end() })
  const client = new DeliveryClient({ policy: new WebhookUrlPolicy({ allowHttp: true, allowedHosts: ['127.0.0.1'] }), connectTimeoutMs: 2000, keepAliveMs: 5000 })
  t.teardown(() => client.close())
  for (let n = 1; n <= 5; n++) t.match(await send(client, receiver.url, n), { ok: true, status: 204 })
  t.same(receiver.received.map((r) => r.id), ['evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_5'], 'each delivered, in order')
  t.equal(receiver.connections(), 1, 'over one TCP connection')
  t.equal(client.connections, 1, 'which the policy checked once, when it was opened')

  // An answer with a body is read to its end: the connection stays usable.
  receiver.respond((_req, res) => { res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks') })
  t.match(await send(client, receiver.url, 6), { ok: true, status: 200 })
  t.match(await send(client, receiver.url, 7), { ok: true, status: 200 })
  t.equal(receiver.connections(), 1, 'still the same connection after answers with bodies')
})

t.test('WEBHOOK_KEEP_ALIVE_MS=0: a new connection for each attempt', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  receiver.respond((_req, res) => { res.writeHead(204).end() })
  const client = new DeliveryClient({ policy: new WebhookUrlPolicy({ allowHttp: true, allowedHosts: ['127.0.0.1'] }), connectTimeoutMs: 2000, keepAliveMs: 0 })
  t.teardown(() => client.close())
  for (let n = 1; n <= 3; n++) t.match(await send(client, receiver.url, n), { ok: true, status: 204 })
  t.equal(receiver.connections(), 3)
})

t.test('an answer past the byte limit drops its connection; the next delivery opens a new one', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  // More than the limit, and the answer never ends: reading stops at the limit.
  receiver.respond((_req, res) => { res.writeHead(200).write('x'.repeat(4096)) })
  const client = new DeliveryClient({ policy: new WebhookUrlPolicy({ allowHttp: true, allowedHosts: ['127.0.0.1'] }), connectTimeoutMs: 2000, keepAliveMs: 5000 })
  t.teardown(() => client.close())
  t.match(await send(client, receiver.url, 1), { ok: true, status: 200 }, 'the status counts')
  receiver.respond((_req, res) => { res.writeHead(204).end() })
  t.match(await send(client, receiver.url, 2), { ok: true, status: 204 })
  const opened = receiver.connections()
  t.ok(opened >= 2, `the first connection was not reused (${opened} opened)`)
  t.match(await send(client, receiver.url, 3), { ok: true, status: 204 })
  t.equal(receiver.connections(), opened, 'a clean one is')
})

t.test('a new socket to an address the policy forbids is refused, even when the endpoint was allowed before', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  receiver.respond((_req, res) => { res.writeHead(204).end() })
  const policy = new SwitchablePolicy({ allowHttp: true, allowedHosts: ['127.0.0.1'] })
  const client = new DeliveryClient({ policy, connectTimeoutMs: 2000, keepAliveMs: 5000 })
  t.teardown(() => client.close())
  t.match(await send(client, receiver.url, 1), { ok: true })
  t.match(await send(client, receiver.url, 2), { ok: true })
  t.equal(receiver.connections(), 1, 'allowed: one pooled connection')

  // The allowance is gone and the pooled connection closes (the receiver's idle timeout):
  // the next delivery needs a new socket, and that socket is checked again.
  policy.allowing = false
  receiver.dropConnections()
  await new Promise((resolve) => setTimeout(resolve, 50))
  const refused = await send(client, receiver.url, 3)
  t.match(refused, { ok: false, status: null, error: /127\.0\.0\.1.*loopback/ }, 'refused, saying why')
  t.equal(receiver.received.length, 2, 'the receiver got nothing more')
  t.equal(client.connections, 1, 'no refused socket joined the pool')

  policy.allowing = true
  t.match(await send(client, receiver.url, 4), { ok: true }, 'allowed again: a new connection, checked and kept')
  t.equal(client.connections, 2)
})

t.test('a host whose name resolves to a forbidden address on a new socket is refused before connecting', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  let answer = '93.184.216.34'
  const policy = new WebhookUrlPolicy({ allowHttp: true, allowedHosts: [], resolve: async () => [{ address: answer, family: 4 }] })
  const client = new DeliveryClient({ policy, connectTimeoutMs: 500, keepAliveMs: 5000 })
  t.teardown(() => client.close())
  answer = '127.0.0.1'
  const refused = await send(client, `http://rebind.test:${receiver.port}/hook`, 1)
  t.match(refused, { ok: false, status: null, error: /resolves to 127\.0\.0\.1, a loopback address/ })
  t.equal(receiver.connections(), 0, 'refused in the socket\'s own lookup: no connection opened')
})

t.test('no answer within the timeout is a failure; a shutdown abort is not an attempt', async (t) => {
  const receiver = await startReceiver(t, '/hook', { keepAliveMs: 5000 })
  receiver.respond(() => {})
  const client = new DeliveryClient({ policy: new WebhookUrlPolicy({ allowHttp: true, allowedHosts: ['127.0.0.1'] }), connectTimeoutMs: 2000, keepAliveMs: 5000 })
  t.teardown(() => client.close())
  t.match(await client.attempt({ url: receiver.url, headers: {}, body: '{}' }, { timeoutMs: 200, maxResponseBytes: 10 }), { ok: false, status: null, error: 'no answer within 200 ms' })
  const stop = new AbortController()
  const pending = client.attempt({ url: receiver.url, headers: {}, body: '{}' }, { timeoutMs: 5000, maxResponseBytes: 10, signal: stop.signal })
  setTimeout(() => stop.abort(), 50)
  t.match(await pending, { ok: false, aborted: true })
  t.match(await client.attempt({ url: receiver.url, headers: {}, body: '{}' }, { timeoutMs: 5000, maxResponseBytes: 10, signal: stop.signal }), { aborted: true }, 'already aborted: not sent')
})
