// Rolling a key, as an integrator sees it through the API: the new and the previous secret are
// one key until the grace ends; then the previous one answers 401 like a revoked secret, even
// where it is cached, on every instance. A second roll ends the older secret, and revoke and
// deactivate stop both.
import t from 'tap'
import type { App } from '../../app.ts'
import { openDatabase } from '../../db/client.ts'
import { listKeys, rollKey, setKeyStatus } from '../../services/api-key-admin.ts'
import { authHeaders, buildTestApp, created, createTestDatabase, expectError, importProducts, line, makeKey, makeProduct, orderBody, postOrder, sleep, UNLIMITED, usingPostgres } from '../helper.ts'

const LIST = '/external/v1/products'
const ENV = { ...UNLIMITED, WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }

const { database, url } = await createTestDatabase(t)
const app = await buildTestApp(t, { database, env: ENV })
const mug = makeProduct({ name: 'Rolled Mug', quantity: 1000 })
await importProducts(app, [mug])

const status = async (on: App, secret: string) => (await on.inject({ url: LIST, headers: authHeaders(secret) })).statusCode

/** How long until `probe` holds, failing past `limitMs`. */
async function within (limitMs: number, probe: () => Promise<boolean>): Promise<number> {
  const start = Date.now()
  for (;;) {
    if (await probe()) return Date.now() - start
    if (Date.now() - start > limitMs) throw new Error(`not seen within ${limitMs} ms`)
    await sleep(25)
  }
}

async function previousKeyExpiresAt (id: string): Promise<string | null | undefined> {
  return (await listKeys(database)).find((k) => k.id === id)?.previousKeyExpiresAt
}

t.test('after a roll both secrets are the same key: id, scopes, orders and webhooks', async (t) => {
  const { id, key: previous } = await makeKey(app, ['products:list', 'orders:create', 'orders:list', 'webhooks:manage'])
  t.equal(await previousKeyExpiresAt(id), null, 'no previous secret before the first roll')
  const order = await created(t, await postOrder(app, previous, orderBody([line(mug, 1)])))
  const hook = await app.inject({
    method: 'POST',
    url: '/external/v1/webhooks',
    headers: { ...authHeaders(previous), 'content-type': 'application/json' },
    payload: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['order.*'] })
  })
  t.equal(hook.statusCode, 201, hook.body)

  const before = Date.now()
  const rolled = await rollKey(database, id.toUpperCase(), 3_600_000)
  t.strictSame(Object.keys(rolled), ['id', 'key', 'previousKeyExpiresAt'])
  t.equal(rolled.id, id)
  t.match(rolled.key, /^sk_[A-Za-z0-9_-]{43}$/, 'the new secret has the form of the old one')
  t.not(rolled.key, previous)
  const ends = Date.parse(rolled.previousKeyExpiresAt)
  t.ok(ends >= before + 3_600_000 - 1000 && ends <= Date.now() + 3_600_000 + 1000, 'the previous secret ends an hour from now')
  t.equal(await previousKeyExpiresAt(id), rolled.previousKeyExpiresAt, 'keys list shows when the previous secret ends')

  for (const [name, secret] of [['previous', previous], ['new', rolled.key]] as const) {
    t.equal(await status(app, secret), 200, `the ${name} secret works`)
    const orders = (await app.inject({ url: '/external/v1/orders', headers: authHeaders(secret) })).json<{ items: Array<{ id: string }> }>()
    t.strictSame(orders.items.map((o) => o.id), [order.id], `the ${name} secret sees the key's order`)
    const hooks = (await app.inject({ url: '/external/v1/webhooks', headers: authHeaders(secret) })).json<{ items: Array<{ id: string }> }>()
    t.strictSame(hooks.items.map((h) => h.id), [hook.json<{ id: string }>().id], `the ${name} secret sees the key's webhook`)
    expectError(t, await app.inject({ url: `/external/v1/orders/${order.id}`, headers: authHeaders(secret) }), 403, 'insufficient_scope', { what: `the ${name} secret has the key's scopes, no more` })
  }
  const another = await created(t, await postOrder(app, rolled.key, orderBody([line(mug, 1)])))
  const listed = (await app.inject({ url: '/external/v1/orders', headers: authHeaders(previous) })).json<{ items: Array<{ id: string }> }>()
  t.strictSame(listed.items.map((o) => o.id).sort(), [order.id, another.id].sort(), 'an order made with the new secret is seen with the previous one')
})

t.test('the previous secret stops when the grace ends, even while cached', async (t) => {
  // A cache longer than the grace (the longest KEY_CACHE_TTL_MS allows): the cached entry itself must carry the end.
  const cached = await buildTestApp(t, { database, env: { ...ENV, KEY_CACHE_TTL_MS: '5000' } })
  const { id, key: previous } = await makeKey(app, ['products:list'])
  t.equal(await status(cached, previous), 200, 'cached before the roll')
  const rolled = await rollKey(database, id, 2000)
  const ends = Date.parse(rolled.previousKeyExpiresAt)
  // The entry cached before the roll still says "current secret": wait for a fresh lookup.
  const fresh = await buildTestApp(t, { database, env: { ...ENV, KEY_CACHE_TTL_MS: '5000' } })
  t.equal(await status(fresh, previous), 200, 'the previous secret works during the grace (and is now cached with its end)')
  t.equal(await status(fresh, rolled.key), 200, 'the new secret works')
  t.ok(Date.now() < ends, 'used before the grace ended')
  await sleep(ends - Date.now() + 50)
  const res = await fresh.inject({ url: LIST, headers: authHeaders(previous) })
  expectError(t, res, 401, 'invalid_api_key', { message: /replaced.*grace period has ended/, what: 'the previous secret after its grace' })
  t.equal(await status(fresh, rolled.key), 200, 'the new secret still works')
  t.equal(await previousKeyExpiresAt(id), null, 'keys list shows no previous secret once it has ended')
})

t.test('a grace of 0 stops the previous secret within the cache life', async (t) => {
  const { id, key: previous } = await makeKey(app, ['products:list'])
  t.equal(await status(app, previous), 200)
  t.equal(await status(app, previous), 200, 'cached')
  const rolled = await rollKey(database, id, 0)
  t.ok(Date.parse(rolled.previousKeyExpiresAt) <= Date.now() + 1000, 'the previous secret ends now')
  const elapsed = await within(5000, async () => (await status(app, previous)) === 401)
  t.ok(elapsed < 5000, `the cached previous secret stopped after ${elapsed} ms`)
  const fresh = await buildTestApp(t, { database, env: ENV })
  t.equal(await status(fresh, previous), 401, 'refused at once where it was not cached')
  t.equal(await status(app, rolled.key), 200, 'the new secret works')
  t.equal(await previousKeyExpiresAt(id), null)
})

t.test('a second roll ends the older previous secret at once: never more than two secrets', async (t) => {
  const { id, key: first } = await makeKey(app, ['products:list'])
  const second = (await rollKey(database, id, 3_600_000)).key
  t.equal(await status(app, first), 200)
  const third = await rollKey(database, id, 3_600_000)
  const fresh = await buildTestApp(t, { database, env: ENV })
  t.equal(await status(fresh, first), 401, 'the first secret ends with the second roll')
  t.equal(await status(fresh, second), 200, 'the second secret is the previous one now, in its grace')
  t.equal(await status(fresh, third.key), 200, 'the third secret works')
  const elapsed = await within(5000, async () => (await status(app, first)) === 401)
  t.ok(elapsed < 5000, `where it was cached, the first secret stopped after ${elapsed} ms`)
  t.equal(await previousKeyExpiresAt(id), third.previousKeyExpiresAt)
})

for (const change of ['revoked', 'inactive'] as const) {
  t.test(`${change === 'revoked' ? 'revoke' : 'deactivate'} stops both secrets`, async (t) => {
    const { id, key: previous } = await makeKey(app, ['products:list'])
    const { key: current } = await rollKey(database, id, 3_600_000)
    t.equal(await status(app, previous), 200)
    t.equal(await status(app, current), 200)
    t.equal(await setKeyStatus(database, id, change), change)
    const elapsed = await within(5000, async () => (await status(app, previous)) === 401 && (await status(app, current)) === 401)
    t.ok(elapsed < 5000, `both stopped after ${elapsed} ms`)
    const fresh = await buildTestApp(t, { database, env: ENV })
    for (const secret of [previous, current]) {
      expectError(t, await fresh.inject({ url: LIST, headers: authHeaders(secret) }), 401, 'invalid_api_key', { message: new RegExp(change) })
    }
    if (change === 'inactive') {
      t.equal(await setKeyStatus(database, id, 'active'), 'active')
      const again = await buildTestApp(t, { database, env: ENV })
      t.equal(await status(again, previous), 200, 'activated again: the previous secret works for the rest of its grace')
      t.equal(await status(again, current), 200)
    } else {
      await t.rejects(rollKey(database, id, 0), { code: 'validation_failed', message: /revoked/ }, 'a revoked key cannot be rolled')
    }
  })
}

t.test('refusals change nothing', async (t) => {
  const { id, key } = await makeKey(app, ['products:list'])
  for (const graceMs of [-1, 1.5, 7 * 86_400_000 + 1, Number.NaN]) {
    await t.rejects(rollKey(database, id, graceMs), { code: 'validation_failed', message: /grace must be from 0 to 7 days/ }, `grace ${graceMs} ms`)
  }
  await t.rejects(rollKey(database, crypto.randomUUID(), 0), { code: 'not_found', message: /no key has id/ })
  const fresh = await buildTestApp(t, { database, env: ENV })
  t.equal(await status(fresh, key), 200, 'the key keeps its secret')
  t.equal(await previousKeyExpiresAt(id), null)
  const longest = await rollKey(database, id, 7 * 86_400_000)
  t.ok(Date.parse(longest.previousKeyExpiresAt) > Date.now() + 7 * 86_400_000 - 60_000, 'a grace of exactly 7 days is allowed')
})

t.test('a roll with a short grace seen expiring on two instances', async (t) => {
  // On PostgreSQL each instance has its own pool, as separate servers would.
  const second = url === undefined ? database : await openDatabase({ url })
  if (second !== database) t.teardown(() => second.close())
  const instances = [await buildTestApp(t, { database, env: ENV }), await buildTestApp(t, { database: second, env: ENV })]
  const { id, key: previous } = await makeKey(app, ['products:list'])
  for (const instance of instances) t.equal(await status(instance, previous), 200, 'the secret is in use (and cached) on both instances')
  const rolled = await rollKey(database, id, 2500)
  const ends = Date.parse(rolled.previousKeyExpiresAt)
  for (const [i, instance] of instances.entries()) {
    await within(5000, async () => (await status(instance, rolled.key)) === 200)
    t.equal(await status(instance, previous), 200, `instance ${i + 1}: the previous secret works during the grace`)
  }
  t.ok(Date.now() < ends, 'both instances used both secrets before the grace ended')
  const stopped = await Promise.all(instances.map(async (instance) => {
    await within(ends - Date.now() + 5000, async () => (await status(instance, previous)) === 401)
    return Date.now() - ends
  }))
  for (const [i, after] of stopped.entries()) {
    t.ok(after < 5000, `instance ${i + 1}: the previous secret stopped ${after} ms after the grace ended`)
    t.equal(await status(instances[i]!, rolled.key), 200, `instance ${i + 1}: the new secret works`)
  }
  t.comment(`on ${usingPostgres ? 'PostgreSQL' : 'PGlite'}`)
})
