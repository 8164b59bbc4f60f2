// The webhook endpoints' API (decisions §11): scope, a key's own endpoints only, at most ten,
// the events filter, the URL rules and their reasons, secrets shown once and rotated, the
// deliveries listing and redelivery.
import t from 'tap'
import { SCOPES } from '../../lib/api-key-secret.ts'
import type { ResolvedAddress } from '../../services/webhooks/url-policy.ts'
import { systemResolver } from '../../services/webhooks/url-policy.ts'
import { authHeaders, buildTestApp, expectError, makeKey, UNLIMITED } from '../helper.ts'

interface Endpoint { id: string, url: string, events: string[], description: string | null, status: string, disabledReason: string | null, createdAt: string, secret?: string }

// Names this test resolves itself: public, private, and one that changes its answer.
const DNS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'internal.example.com': ['10.0.0.5'],
  'mixed.example.com': ['93.184.216.34', '192.168.1.20'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'v6-private.example.com': ['fd12:3456::1'],
  'allowed.internal': ['10.1.1.1']
}
const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
  const answer = DNS[hostname]
  if (answer === undefined) return systemResolver(hostname)
  return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
}

const app = await buildTestApp(t, {
  env: { ...UNLIMITED, WEBHOOK_ALLOWED_HOSTS: 'allowed.internal, 127.0.0.1:9', EVENT_PUBLISH_MS: '3600000' },
  webhookResolver: resolver
})
const { key } = await makeKey(app, ['webhooks:manage'])
const { key: other } = await makeKey(app, ['webhooks:manage'], { name: 'other integrator' })
const { key: noScope } = await makeKey(app, SCOPES.filter((s) => s !== 'webhooks:manage'))

const URL_OK = 'https://hooks.example.com/storefront'

function send (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, secret: string, body?: unknown) {
  return app.inject({
    method,
    url: `/external/v1${url}`,
    headers: { ...authHeaders(secret), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) })
  })
}

async function create (secret: string, body: Record<string, unknown>): Promise<Endpoint> {
  const res = await send('POST', '/webhooks', secret, body)
  if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`)
  return res.json<Endpoint>()
}

t.test('the webhooks:manage scope is required', async (t) => {
  expectError(t, await send('GET', '/webhooks', noScope), 403, 'insufficient_scope', { message: /webhooks:manage/ })
  expectError(t, await send('POST', '/webhooks', noScope, { url: URL_OK }), 403, 'insufficient_scope')
})

t.test('create shows the secret once; list, get, change and delete', async (t) => {
  const res = await send('POST', '/webhooks', key, { url: URL_OK })
  t.equal(res.statusCode, 201)
  const made = res.json<Endpoint>()
  t.same(Object.keys(made).sort(), ['createdAt', 'description', 'disabledReason', 'events', 'id', 'secret', 'status', 'url'])
  t.match(made, { url: URL_OK, events: ['*'], description: null, status: 'enabled', disabledReason: null })
  t.match(made.secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  t.equal(Buffer.from(made.secret!.slice(6), 'base64').length, 32, '32 random bytes')

  const list = (await send('GET', '/webhooks', key)).json<{ items: Endpoint[] }>()
  t.same(list.items.map((e) => e.id), [made.id])
  t.notOk('secret' in list.items[0]!, 'the list never shows the secret')
  const got = await send('GET', `/webhooks/${made.id}`, key)
  t.equal(got.statusCode, 200)
  t.notOk('secret' in got.json<Endpoint>(), 'nor does get')
  const { secret: _secret, ...shown } = made
  t.same(got.json<Endpoint>(), shown)

  const changed = await send('PATCH', `/webhooks/${made.id}`, key, { events: ['order.*', 'product.deleted'], description: 'Orders' })
  t.equal(changed.statusCode, 200)
  t.match(changed.json<Endpoint>(), { events: ['order.*', 'product.deleted'], description: 'Orders', status: 'enabled' })
  const disabled = (await send('PATCH', `/webhooks/${made.id}`, key, { status: 'disabled' })).json<Endpoint>()
  t.equal(disabled.status, 'disabled')
  t.type(disabled.disabledReason, 'string', 'a disabled endpoint says why')
  const enabled = (await send('PATCH', `/webhooks/${made.id}`, key, { status: 'enabled', description: null })).json<Endpoint>()
  t.match(enabled, { status: 'enabled', disabledReason: null, description: null })

  const deleted = await send('DELETE', `/webhooks/${made.id}`, key)
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  expectError(t, await send('GET', `/webhooks/${made.id}`, key), 404, 'webhook_not_found')
  expectError(t, await send('DELETE', `/webhooks/${made.id}`, key), 404, 'webhook_not_found')
})

t.test('another key\'s endpoint is not found, whatever the operation', async (t) => {
  const mine = await create(key, { url: URL_OK })
  const base = `/webhooks/${mine.id}`
  expectError(t, await send('GET', base, other), 404, 'webhook_not_found')
  expectError(t, await send('PATCH', base, other, { description: 'mine now' }), 404, 'webhook_not_found')
  expectError(t, await send('PATCH', base, other, { url: 'https://10.0.0.1/' }), 404, 'webhook_not_found', { what: 'not found before its URL is checked' })
  expectError(t, await send('DELETE', base, other), 404, 'webhook_not_found')
  expectError(t, await send('POST', `${base}/rotate-secret`, other), 404, 'webhook_not_found')
  expectError(t, await send('GET', `${base}/deliveries`, other), 404, 'webhook_not_found')
  expectError(t, await send('POST', `${base}/deliveries/evt_1/redeliver`, other), 404, 'webhook_not_found')
  t.same((await send('GET', '/webhooks', other)).json(), { items: [] }, 'nor listed')
  t.equal((await send('GET', base, key)).statusCode, 200, 'and still there for its key')
  expectError(t, await send('GET', `/webhooks/${crypto.randomUUID()}`, key), 404, 'webhook_not_found', { what: 'an unknown id' })
  await send('DELETE', base, key)
})

t.test('at most ten endpoints a key', async (t) => {
  const { key: busy } = await makeKey(app, ['webhooks:manage'])
  const made = await Promise.all(Array.from({ length: 10 }, (_, i) => create(busy, { url: `${URL_OK}/${i}` })))
  t.equal(made.length, 10)
  expectError(t, await send('POST', '/webhooks', busy, { url: URL_OK }), 400, 'webhook_limit_reached')
  t.equal((await send('POST', '/webhooks', key, { url: URL_OK })).statusCode, 201, 'another key is not limited by it')
  await send('DELETE', `/webhooks/${made[0]!.id}`, busy)
  t.equal((await send('POST', '/webhooks', busy, { url: URL_OK })).statusCode, 201, 'after a delete there is room again')
})

t.test('ten at once from one key: never an eleventh', async (t) => {
  const { key: racing } = await makeKey(app, ['webhooks:manage'])
  const answers = await Promise.all(Array.from({ length: 14 }, () => send('POST', '/webhooks', racing, { url: URL_OK })))
  t.equal(answers.filter((r) => r.statusCode === 201).length, 10)
  t.equal(answers.filter((r) => r.statusCode === 400 && r.json<{ error: string }>().error === 'webhook_limit_reached').length, 4)
})

t.test('events: event types, order.*, product.* or *; anything else is validation_failed', async (t) => {
  const { key: k } = await makeKey(app, ['webhooks:manage'])
  for (const events of [['*'], ['order.*'], ['product.*'], ['product.created', 'order.status_changed']]) {
    const made = await create(k, { url: URL_OK, events })
    t.same(made.events, events)
    await send('DELETE', `/webhooks/${made.id}`, k)
  }
  for (const events of [['order'], ['orders.*'], ['*.*'], [], 'order.*', [1], ['order.created', 'order.created'], ['PRODUCT.CREATED']]) {
    expectError(t, await send('POST', '/webhooks', k, { url: URL_OK, events }), 400, 'validation_failed', { details: true, what: JSON.stringify(events) })
  }
  const made = await create(k, { url: URL_OK })
  expectError(t, await send('PATCH', `/webhooks/${made.id}`, k, { events: ['nope'] }), 400, 'validation_failed', { details: true })
  expectError(t, await send('PATCH', `/webhooks/${made.id}`, k, { status: 'paused' }), 400, 'validation_failed', { details: true })
  // Unknown fields are dropped, as everywhere in the API: the secret is not a field to set.
  const ignored = await send('PATCH', `/webhooks/${made.id}`, k, { secret: 'whsec_x', description: 'kept' })
  t.equal(ignored.statusCode, 200)
  t.notOk('secret' in ignored.json<Endpoint>())
})

t.test('bad input is refused as such, never a 500', async (t) => {
  expectError(t, await send('POST', '/webhooks', key, {}), 400, 'validation_failed', { details: true, what: 'no url' })
  expectError(t, await send('POST', '/webhooks', key, { url: 42 }), 400, 'validation_failed', { details: true, what: 'a number' })
  expectError(t, await send('POST', '/webhooks', key, { url: URL_OK, description: 'x'.repeat(501) }), 400, 'validation_failed', { details: true })
  expectError(t, await send('GET', '/webhooks/not-a-uuid', key), 400, 'validation_failed', { details: true })
  const res = await app.inject({ method: 'POST', url: '/external/v1/webhooks', headers: { ...authHeaders(key), 'content-type': 'application/json' }, payload: '{"url":' })
  expectError(t, res, 400, 'invalid_json')
  const made = await create(key, { url: URL_OK })
  expectError(t, await send('POST', `/webhooks/${made.id}/deliveries/evt_x/redeliver`, key), 400, 'validation_failed', { details: true })
  expectError(t, await send('POST', `/webhooks/${made.id}/deliveries/evt_99999999/redeliver`, key), 404, 'webhook_not_found', { message: /no delivery of event evt_99999999/ })
  expectError(t, await send('GET', `/webhooks/${made.id}/deliveries?cursor=garbage`, key), 400, 'invalid_cursor')
  expectError(t, await send('GET', `/webhooks/${made.id}/deliveries?page=abc`, key), 400, 'validation_failed', { details: true })
  await send('DELETE', `/webhooks/${made.id}`, key)
})

t.test('URL rules: https, length, public hosts (with the reason), allowed hosts', async (t) => {
  const { key: k } = await makeKey(app, ['webhooks:manage'])
  const refused: Array<[string, RegExp]> = [
    ['http://hooks.example.com/x', /https/],
    ['ftp://hooks.example.com/x', /https/],
    ['not a url', /absolute URL/],
    ['/relative/path', /absolute URL/],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, /2,048/],
    ['https://user:pw@hooks.example.com/', /user name or password/],
    ['https://127.0.0.1/x', /loopback/],
    ['https://127.1.2.3:8443/x', /loopback/],
    ['https://0x7f.1/x', /loopback/],
    ['https://[::1]/x', /loopback/],
    ['https://0.0.0.0/x', /unspecified/],
    ['https://[::]/x', /unspecified/],
    ['https://10.2.3.4/x', /private/],
    ['https://172.16.0.1/x', /private/],
    ['https://172.31.255.254/x', /private/],
    ['https://192.168.0.10/x', /private/],
    ['https://169.254.169.254/latest/meta-data', /link-local/],
    ['https://[fe80::1]/x', /link-local/],
    ['https://[fc00::1]/x', /private/],
    ['https://[fd00::abcd]/x', /private/],
    ['https://[::ffff:127.0.0.1]/x', /loopback/],
    ['https://[::ffff:10.0.0.1]/x', /private/],
    ['https://100.64.0.1/x', /carrier-grade NAT/],
    ['https://localhost/x', /resolves to .*loopback/],
    ['https://internal.example.com/x', /internal\.example\.com resolves to 10\.0\.0\.5, a private address/],
    ['https://mixed.example.com/x', /resolves to 192\.168\.1\.20, a private address/],
    ['https://mapped.example.com/x', /loopback/],
    ['https://v6-private.example.com/x', /private/],
    ['https://no-such-host.invalid/x', /could not be resolved/],
    ['https://127.0.0.1:10/x', /loopback/]
  ]
  for (const [url, why] of refused) {
    expectError(t, await send('POST', '/webhooks', k, { url }), 400, 'invalid_webhook_url', { message: why, what: url.slice(0, 60) })
  }
  const made = await create(k, { url: URL_OK })
  expectError(t, await send('PATCH', `/webhooks/${made.id}`, k, { url: 'https://10.0.0.1/' }), 400, 'invalid_webhook_url', { message: /private/, what: 'a change is checked too' })
  await send('DELETE', `/webhooks/${made.id}`, k)

  // Public ones, and what the operator allowed (the host, or the host with its port).
  for (const url of ['https://hooks.example.com/x', 'https://93.184.216.34/x', 'https://[2606:2800:220:1:248:1893:25c8:1946]/x', 'https://allowed.internal/x', 'https://127.0.0.1:9/x', `https://hooks.example.com/${'a'.repeat(2000)}`]) {
    const res = await send('POST', '/webhooks', k, { url })
    t.equal(res.statusCode, 201, `${url.slice(0, 60)}: ${res.statusCode === 201 ? 'accepted' : res.body}`)
    if (res.statusCode === 201) await send('DELETE', `/webhooks/${res.json<Endpoint>().id}`, k)
  }
})

t.test('plain http only when the operator allows it', async (t) => {
  const lax = await buildTestApp(t, { env: { ...UNLIMITED, WEBHOOK_ALLOW_HTTP: 'true', EVENT_PUBLISH_MS: '3600000' }, webhookResolver: resolver })
  const { key: k } = await makeKey(lax, ['webhooks:manage'])
  const res = await lax.inject({ method: 'POST', url: '/external/v1/webhooks', headers: { ...authHeaders(k), 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'http://hooks.example.com/x' }) })
  t.equal(res.statusCode, 201)
  const ftp = await lax.inject({ method: 'POST', url: '/external/v1/webhooks', headers: { ...authHeaders(k), 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'ftp://hooks.example.com/x' }) })
  expectError(t, ftp, 400, 'invalid_webhook_url')
  const privateHttp = await lax.inject({ method: 'POST', url: '/external/v1/webhooks', headers: { ...authHeaders(k), 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'http://192.168.1.1/x' }) })
  expectError(t, privateHttp, 400, 'invalid_webhook_url', { message: /private/ })
})

t.test('rotate-secret shows a new secret once', async (t) => {
  const made = await create(key, { url: URL_OK })
  const res = await send('POST', `/webhooks/${made.id}/rotate-secret`, key)
  t.equal(res.statusCode, 200)
  const rotated = res.json<Endpoint>()
  t.match(rotated.secret, /^whsec_/)
  t.not(rotated.secret, made.secret)
  t.notOk('secret' in (await send('GET', `/webhooks/${made.id}`, key)).json<Endpoint>())
  await send('DELETE', `/webhooks/${made.id}`, key)
})

t.test('a new endpoint has no deliveries', async (t) => {
  const made = await create(key, { url: URL_OK })
  const res = await send('GET', `/webhooks/${made.id}/deliveries`, key)
  t.equal(res.statusCode, 200)
  t.same(res.json(), { items: [], page: 1, pageSize: 25, total: 0, nextCursor: null })
  await send('DELETE', `/webhooks/${made.id}`, key)
})
