import { createHash } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { listApiKeys, setApiKeyStatus } from '../../db/api-keys.ts'
import { execute, type Database } from '../../db/client.ts'
import { generateSecret } from '../../lib/api-key-secret.ts'
import { authHeaders, buildTestApp, createTestDatabase, expectError, importProducts, makeKey, makeProduct, sleep } from '../helper.ts'

// Counts the api_keys lookups the app makes: every key lookup is a `select` on the database
// (catalogue reads and polling use raw `execute`).
// `failUpdates` makes the next `update` throw, as a database hiccup would.
function countingSelects (database: Database) {
  const counter = { selects: 0, failUpdates: false }
  const db = new Proxy(database.db, {
    get (target, prop) {
      const value = Reflect.get(target, prop, target) as unknown
      if (prop === 'select') counter.selects++
      if (prop === 'update' && counter.failUpdates) {
        counter.failUpdates = false
        return () => { throw new Error('connection lost') }
      }
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    }
  })
  return { database: { ...database, db }, counter }
}

const { database: realDatabase } = await createTestDatabase(t)
const { database, counter } = countingSelects(realDatabase)
// Every operation is tried without a valid key below: more failures than one client's default allowance.
const app = await buildTestApp(t, { database, env: { AUTH_FAILURE_LIMIT: '1000' } })
const product = makeProduct({ name: 'Auth probe' })
await importProducts(app, [product])
const LIST = '/external/v1/products'
const FIND = `/external/v1/products/${product.id}`

async function expect401 (t: Parameters<typeof expectError>[0], headers: Record<string, string>, message: RegExp) {
  const res = await app.inject({ url: LIST, headers })
  expectError(t, res, 401, 'invalid_api_key', { message })
  return res
}

t.test('the key in either header', async (t) => {
  const { key } = await makeKey(app, ['products:list'])
  const headerSets: Array<[string, Record<string, string>]> = [
    ['X-Api-Key', { 'x-api-key': key }],
    ['Authorization: Api-Key', { authorization: `Api-Key ${key}` }],
    ['Authorization: api-key', { authorization: `api-key ${key}` }],
    ['Authorization: API-KEY', { authorization: `API-KEY ${key}` }],
    ['Authorization: aPi-KeY with extra spaces', { authorization: `aPi-KeY   ${key}` }],
    ['both headers with the same key', { 'x-api-key': key, authorization: `Api-Key ${key}` }]
  ]
  for (const [name, headers] of headerSets) {
    const res = await app.inject({ url: LIST, headers })
    t.equal(res.statusCode, 200, name)
    t.match(res.json(), { items: Array, page: 1, pageSize: 25 }, name)
  }
})

t.test('401 invalid_api_key for every cause', async (t) => {
  const { key } = await makeKey(app, ['products:list'])
  const { key: other } = await makeKey(app, ['products:list'])

  t.test('missing', async (t) => {
    await expect401(t, {}, /X-Api-Key/)
    await expect401(t, { 'x-api-key': '' }, /X-Api-Key/)
  })

  t.test('both headers with different keys', async (t) => {
    await expect401(t, { 'x-api-key': key, authorization: `Api-Key ${other}` }, /different/)
  })

  t.test('malformed', async (t) => {
    const cases: Array<Record<string, string>> = [
      { 'x-api-key': 'not-a-key' },
      { 'x-api-key': key.slice(0, -1) },
      { 'x-api-key': `${key}x` },
      { 'x-api-key': key.replace('sk_', 'pk_') },
      { authorization: `Bearer ${key}` },
      { authorization: key },
      { authorization: 'Api-Key' },
      { authorization: `Api-Key ${key} extra` },
      { authorization: 'Api-Key short' }
    ]
    for (const headers of cases) {
      await expect401(t, headers, /malformed/)
    }
  })

  t.test('unknown', async (t) => {
    await expect401(t, authHeaders(generateSecret()), /not valid/)
    await expect401(t, { authorization: `Api-Key ${generateSecret()}` }, /not valid/)
  })

  t.test('inactive (deactivated)', async (t) => {
    const created = await makeKey(app, ['products:list'])
    t.equal(await setApiKeyStatus(app.database.db, created.id, 'inactive'), 'ok')
    await expect401(t, authHeaders(created.key), /inactive/)
    // And back: an operator can reactivate a deactivated key.
    t.equal(await setApiKeyStatus(app.database.db, created.id, 'active'), 'ok')
    const fresh = await buildTestApp(t, { database })
    t.equal((await fresh.inject({ url: LIST, headers: authHeaders(created.key) })).statusCode, 200)
  })

  t.test('revoked', async (t) => {
    const created = await makeKey(app, ['products:list'])
    t.equal(await setApiKeyStatus(app.database.db, created.id, 'revoked'), 'ok')
    await expect401(t, authHeaders(created.key), /revoked/)
    // A revoked key stays revoked.
    t.equal(await setApiKeyStatus(app.database.db, created.id, 'active'), 'revoked')
    t.equal(await setApiKeyStatus(app.database.db, created.id, 'inactive'), 'revoked')
    await expect401(t, authHeaders(created.key), /revoked/)
  })

  t.test('expired', async (t) => {
    const created = await makeKey(app, ['products:list'], { expiresAt: new Date(Date.now() - 1000) })
    await expect401(t, authHeaders(created.key), /expired/)
  })

  t.test('a key expires while it is cached', async (t) => {
    const expiresAt = new Date(Date.now() + 1500)
    const created = await makeKey(app, ['products:list'], { expiresAt })
    t.equal((await app.inject({ url: LIST, headers: authHeaders(created.key) })).statusCode, 200)
    t.ok(Date.now() < expiresAt.getTime(), 'used before it expired')
    await sleep(expiresAt.getTime() - Date.now() + 50)
    await expect401(t, authHeaders(created.key), /expired/)
  })

  t.test('the 401 comes before validation and scope checks', async (t) => {
    const res = await app.inject({ url: `${LIST}?page=abc`, headers: authHeaders(generateSecret()) })
    t.equal(res.statusCode, 401)
    t.match(res.json(), { error: 'invalid_api_key' })
    const notAGuid = await app.inject({ url: '/external/v1/products/nope' })
    t.equal(notAGuid.statusCode, 401)
  })
})

t.test('no handler under /external/v1 runs without a key: every operation answers 401 to a request without a valid one', async (t) => {
  const document = app.swagger() as { paths: Record<string, Record<string, unknown>> }
  const operations = Object.entries(document.paths)
    .filter(([path]) => path.startsWith('/external/v1/'))
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => [method.toUpperCase(), path.replaceAll(/\{[^}]+\}/g, crypto.randomUUID())] as const))
  t.ok(operations.length >= 15, `${operations.length} operations`)
  for (const [method, url] of operations) {
    for (const headers of [{}, authHeaders(generateSecret())]) {
      const res = await app.inject({ method: method as 'GET', url, headers })
      // A handler that ran without a key would fail reading it (500), not answer 401.
      t.match({ status: res.statusCode, body: res.json() }, { status: 401, body: { error: 'invalid_api_key' } }, `${method} ${url}`)
    }
  }
})

t.test('outside /external/v1 a request says it has no key', async (t) => {
  const outside = await buildTestApp(t, { database, contract: false })
  outside.get('/probe', async (request) => {
    let apiKey = 'present'
    try {
      Reflect.get(request, 'apiKey')
    } catch (err) {
      apiKey = `throws: ${(err as Error).message}`
    }
    return { authenticatedKey: request.authenticatedKey, apiKey }
  })
  const { key } = await makeKey(outside, ['products:list'])
  const res = await outside.inject({ url: '/probe', headers: authHeaders(key) })
  t.same(res.json(), { authenticatedKey: null, apiKey: 'throws: request.apiKey read on GET /probe, where no key was authenticated' }, 'even with a valid key sent: the prefix authenticates, nothing else')
})

t.test('403 insufficient_scope names the missing scope', async (t) => {
  const { key: listOnly } = await makeKey(app, ['products:list'])
  const { key: findOnly } = await makeKey(app, ['products:find'])
  const { key: ordersOnly } = await makeKey(app, ['orders:create', 'orders:list', 'orders:find'])
  const cases: Array<[string, string, string, number]> = [
    ['list with products:list', LIST, listOnly, 200],
    ['find with products:find', FIND, findOnly, 200],
    ['list with products:find only', LIST, findOnly, 403],
    ['find with products:list only', FIND, listOnly, 403],
    ['list with order scopes only', LIST, ordersOnly, 403],
    ['find with order scopes only', FIND, ordersOnly, 403]
  ]
  for (const [name, url, key, status] of cases) {
    const res = await app.inject({ url, headers: authHeaders(key) })
    if (status === 403) {
      const scope = url === LIST ? 'products:list' : 'products:find'
      expectError(t, res, 403, 'insufficient_scope', { message: new RegExp(scope), what: name })
    } else {
      t.equal(res.statusCode, status, name)
    }
  }
  const noScopes = await makeKey(app, [])
  const res = await app.inject({ url: LIST, headers: authHeaders(noScopes.key) })
  t.equal(res.statusCode, 403)
  t.match(res.json(), { error: 'insufficient_scope', message: /products:list/ })
})

t.test('a valid key is cached: a second request does not look it up again', async (t) => {
  const { key } = await makeKey(app, ['products:list'])
  const before = counter.selects
  t.equal((await app.inject({ url: LIST, headers: authHeaders(key) })).statusCode, 200)
  t.equal(counter.selects - before, 1, 'the first request looks the key up')
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ url: LIST, headers: authHeaders(key) })).statusCode, 200)
  t.equal(counter.selects - before, 1, 'the next ones are served from the cache')
  // The same key through the other header hits the same cache entry.
  t.equal((await app.inject({ url: LIST, headers: { authorization: `Api-Key ${key}` } })).statusCode, 200)
  t.equal(counter.selects - before, 1)
})

for (const status of ['revoked', 'inactive'] as const) {
  t.test(`a ${status === 'revoked' ? 'revoked' : 'deactivated'} key that was cached stops working within 5 s`, async (t) => {
    const created = await makeKey(app, ['products:list'])
    const headers = authHeaders(created.key)
    t.equal((await app.inject({ url: LIST, headers })).statusCode, 200)
    const selects = counter.selects
    t.equal((await app.inject({ url: LIST, headers })).statusCode, 200)
    t.equal(counter.selects, selects, 'the key is served from the cache')

    t.equal(await setApiKeyStatus(app.database.db, created.id, status), 'ok')
    const start = Date.now()
    let res = await app.inject({ url: LIST, headers })
    while (res.statusCode === 200 && Date.now() - start < 10_000) {
      await sleep(50)
      res = await app.inject({ url: LIST, headers })
    }
    const elapsed = Date.now() - start
    t.equal(res.statusCode, 401)
    t.match(res.json(), { error: 'invalid_api_key', message: new RegExp(status) })
    t.ok(elapsed < 5000, `stopped working after ${elapsed} ms`)
  })
}

t.test('lastUsedAt is recorded', async (t) => {
  const created = await makeKey(app, ['products:list'], { name: 'last-used' })
  const lastUsed = async () => (await listApiKeys(app.database.db)).find((k) => k.id === created.id)!.lastUsedAt
  t.equal(await lastUsed(), null)
  const before = Date.now()
  t.equal((await app.inject({ url: LIST, headers: authHeaders(created.key) })).statusCode, 200)
  await app.apiKeys.flushLastUsed()
  const first = await lastUsed()
  t.type(first, 'string')
  t.ok(Date.parse(first!) >= before - 1000 && Date.parse(first!) <= Date.now() + 1000, `lastUsedAt ${first}`)
  // A failed attempt with another key does not count as this key's use; nothing to flush.
  await app.inject({ url: LIST, headers: authHeaders(generateSecret()) })
  await app.apiKeys.flushLastUsed()
  t.equal(await lastUsed(), first)
})

t.test('a last use that fails to be written is written at the next flush', async (t) => {
  const created = await makeKey(app, ['products:list'], { name: 'flush-retry' })
  const lastUsed = async () => (await listApiKeys(app.database.db)).find((k) => k.id === created.id)!.lastUsedAt
  t.equal((await app.inject({ url: LIST, headers: authHeaders(created.key) })).statusCode, 200)
  counter.failUpdates = true
  await t.rejects(app.apiKeys.flushLastUsed(), /connection lost/)
  t.equal(await lastUsed(), null)
  await app.apiKeys.flushLastUsed()
  t.type(await lastUsed(), 'string')
})

t.test('keys are stored only as hashes', async (t) => {
  const created = await makeKey(app, ['products:list'], { name: 'stored' })
  t.match(created.key, /^sk_[A-Za-z0-9_-]{43}$/)
  t.ok(Buffer.from(created.key.slice(3), 'base64url').length >= 32, 'at least 256 random bits')
  const rows = await execute<Record<string, unknown>>(app.database.db, sql`select * from api_keys where id = ${created.id}`)
  t.equal(rows.length, 1)
  const stored = JSON.stringify(rows[0])
  t.notMatch(stored, created.key)
  t.notMatch(stored, created.key.slice(3))
  t.equal(rows[0]!.key_hash, createHash('sha256').update(created.key).digest('hex'))
  t.notMatch(JSON.stringify(await listApiKeys(app.database.db)), created.key)
})
