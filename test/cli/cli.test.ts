// The `storefront` command as an operator runs it: `node bin/storefront.js …` in a child
// process, on a fresh embedded database (DATA_DIR) or, when TEST_DATABASE_URL is set, on a
// fresh PostgreSQL database (DATABASE_URL). Commands that open the database run one at a
// time: each spawn opens it, and the embedded one belongs to one process at a time.
import { spawn } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import { insertEndpoint } from '../../db/webhooks.ts'
import type { CatalogFile } from '../../schemas/catalog-file.ts'
import { createEmptyDatabase } from '../helper.ts'
import { BIN, cleanEnv, runStorefront, type Result } from './spawn.ts'

// Every case spawns tsx (about a second each, more on a busy machine).
t.setTimeout(600_000)

interface Backend {
  name: string
  env: Record<string, string>
  open: () => Promise<Database>
}

function storefront (backend: Backend, args: string[], options: { input?: string, env?: Record<string, string> } = {}): Promise<Result> {
  return runStorefront({ ...backend.env, ...options.env }, args, options.input)
}

/** The one JSON document a --json command printed, after checking it succeeded. */
function json (t: Test, result: Result, what: string): any {
  t.equal(result.code, 0, `${what}: exit code 0${result.code === 0 ? '' : ` (stderr: ${result.stderr})`}`)
  try {
    return JSON.parse(result.stdout)
  } catch {
    t.fail(`${what}: stdout is one JSON document`, { stdout: result.stdout })
    return undefined
  }
}

/** A refused command: exit code 2, nothing on stdout, the reason on stderr. */
function refused (t: Test, result: Result, message: RegExp | string, what: string): void {
  t.equal(result.code, 2, `${what}: exit code 2`)
  t.equal(result.stdout, '', `${what}: nothing on stdout`)
  t.match(result.stderr, message, `${what}: stderr says why`)
}

async function inspect<T> (backend: Backend, use: (database: Database) => Promise<T>): Promise<T> {
  const database = await backend.open()
  try {
    return await use(database)
  } finally {
    await database.close()
  }
}

async function catalogSnapshot (database: Database): Promise<string> {
  const tables = ['categories', 'brands', 'products', 'product_categories', 'variants', 'variant_options', 'combinations', 'combination_options', 'discounts']
  const parts: string[] = []
  for (const table of tables) {
    const [row] = await execute<{ rows: string | null }>(database.db, sql.raw(`select json_agg(t order by t::text)::text as rows from ${table} t`))
    parts.push(`${table}: ${row!.rows ?? '[]'}`)
  }
  return parts.join('\n')
}

async function embedded (t: Test): Promise<Backend> {
  const dir = await mkdtemp(join(tmpdir(), 'sf-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return { name: 'embedded', env: { DATA_DIR: dir }, open: () => openDatabase({ dataDir: dir }) }
}

async function postgresql (t: Test, adminUrl: string): Promise<Backend> {
  const url = await createEmptyDatabase(t, 'sf_cli', adminUrl)
  // With DATABASE_URL set, DATA_DIR must stay untouched.
  const unused = join(await mkdtemp(join(tmpdir(), 'sf-cli-')), 'unused')
  t.teardown(() => rm(join(unused, '..'), { recursive: true, force: true }))
  return { name: 'PostgreSQL', env: { DATABASE_URL: url, DATA_DIR: unused }, open: () => openDatabase({ url, poolSize: 1 }) }
}

const COFFEE = '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'
const catalogFile = (): CatalogFile => ({
  categories: [{ id: COFFEE, name: 'Coffee' }],
  brands: [{ id: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01', name: 'Northwind' }],
  products: [
    { id: 'c0ffee00-0000-4000-8000-000000000001', name: 'Ethiopia Yirgacheffe 250 g', sku: 'COF-ETH-250', quantity: 40, price: 12.5, isAvailable: true, categoryIds: [COFFEE], brandId: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01' },
    { id: 'c0ffee00-0000-4000-8000-000000000002', name: 'Espresso Blend 1 kg', quantity: null, price: 29.99, discount: { type: 'percentage', value: 20, startsAt: null, endsAt: null }, isAvailable: true, categoryIds: [COFFEE] }
  ]
})

async function operatorSuite (t: Test, backend: Backend): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'sf-cli-files-'))
  t.teardown(() => rm(work, { recursive: true, force: true }))
  const run = (args: string[], options?: { input?: string, env?: Record<string, string> }) => storefront(backend, args, options)

  if (backend.env.DATABASE_URL) t.strictSame(json(t, await run(['migrate', '--json']), 'migrate'), { migrated: true })

  const keys: Record<string, { id: string, key: string }> = {}
  await t.test('keys create prints the key once and stores only its hash', async (t) => {
    const expiresAt = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString()
    const alpha = json(t, await run(['keys', 'create', '--name', 'Alpha shop', '--scopes', 'products:list,orders:create', '--json']), 'create alpha')
    t.strictSame(Object.keys(alpha), ['id', 'name', 'key', 'scopes', 'expiresAt', 'mode'])
    t.match(alpha, { id: /^[0-9a-f-]{36}$/, name: 'Alpha shop', key: /^sk_[A-Za-z0-9_-]{43}$/, scopes: ['products:list', 'orders:create'], expiresAt: null, mode: 'live' })
    const beta = json(t, await run(['keys', 'create', '--name', 'beta', '--scopes', 'products:find', '--expires-at', expiresAt, '--rate-limit', '50', '--json']), 'create beta')
    t.strictSame({ ...beta, id: '', key: '' }, { id: '', name: 'beta', key: '', scopes: ['products:find'], expiresAt, mode: 'live' })
    const gamma = json(t, await run(['keys', 'create', '--name', 'gamma', '--scopes', 'products:list, products:find ,orders:list,orders:find,orders:create,webhooks:manage', '--json']), 'create gamma')
    t.equal(gamma.scopes.length, 6)
    // Without --json: the key and a warning, for a person.
    const delta = await run(['keys', 'create', '--name', 'delta', '--scopes', 'orders:find'])
    t.equal(delta.code, 0)
    const deltaKey = /sk_[A-Za-z0-9_-]{43}/.exec(delta.stdout)?.[0]
    t.ok(deltaKey, 'the key is printed')
    t.match(delta.stdout, /not shown again/)
    const deltaId = /created live key ([0-9a-f-]{36})/.exec(delta.stdout)?.[1]
    Object.assign(keys, { alpha, beta, gamma, delta: { id: deltaId!, key: deltaKey! } })

    const secrets = Object.values(keys).map((k) => k.key)
    t.equal(new Set(secrets).size, 4, 'every key is new')
    await inspect(backend, async (database) => {
      const rows = await execute<Record<string, unknown>>(database.db, sql`select * from api_keys`)
      t.equal(rows.length, 4)
      const stored = JSON.stringify(rows)
      for (const secret of secrets) {
        t.notOk(stored.includes(secret) || stored.includes(secret.slice(3)), 'the secret is not in api_keys')
        t.ok(rows.some((r) => r.key_hash === createHash('sha256').update(secret).digest('hex')), 'its SHA-256 is')
      }
      // keys create refuses a past expiry, so the expired state is made here.
      await execute(database.db, sql`update api_keys set expires_at = now() - interval '1 hour' where id = ${keys.beta!.id}`)
    })
  })

  await t.test('keys revoke, deactivate, activate and list', async (t) => {
    t.strictSame(json(t, await run(['keys', 'revoke', keys.gamma!.id, '--json']), 'revoke'), { id: keys.gamma!.id, state: 'revoked' })
    t.strictSame(json(t, await run(['keys', 'deactivate', keys.delta!.id, '--json']), 'deactivate'), { id: keys.delta!.id, state: 'inactive' })
    refused(t, await run(['keys', 'activate', keys.gamma!.id, '--json']), /revoked.*cannot be used again/, 'activate a revoked key')

    const list = json(t, await run(['keys', 'list', '--json']), 'keys list')
    t.ok(Array.isArray(list))
    t.equal(list.length, 4)
    for (const key of list) {
      t.strictSame(Object.keys(key), ['id', 'name', 'state', 'mode', 'scopes', 'expiresAt', 'lastUsedAt', 'rateLimit', 'previousKeyExpiresAt', 'createdAt'], `${key.name}: exactly the documented fields`)
      t.ok(!Number.isNaN(Date.parse(key.createdAt)), 'createdAt is a timestamp')
    }
    t.notOk(JSON.stringify(list).includes('sk_'), 'no secret in the list')
    const byName = Object.fromEntries(list.map((k: { name: string }) => [k.name, k]))
    t.match(byName['Alpha shop'], { id: keys.alpha!.id, state: 'active', mode: 'live', scopes: ['products:list', 'orders:create'], expiresAt: null, lastUsedAt: null, rateLimit: null })
    t.match(byName.beta, { id: keys.beta!.id, state: 'expired', scopes: ['products:find'], expiresAt: /^\d{4}-\d{2}-\d{2}T/, rateLimit: 50 })
    t.ok(Date.parse(byName.beta.expiresAt) < Date.now())
    t.match(byName.gamma, { state: 'revoked', scopes: ['products:list', 'products:find', 'orders:list', 'orders:find', 'orders:create', 'webhooks:manage'] })
    t.match(byName.delta, { state: 'inactive', scopes: ['orders:find'] })

    t.strictSame(json(t, await run(['keys', 'activate', keys.delta!.id, '--json']), 'activate'), { id: keys.delta!.id, state: 'active' })
    t.strictSame(json(t, await run(['keys', 'activate', keys.beta!.id, '--json']), 'activate an expired key'), { id: keys.beta!.id, state: 'expired' })
    refused(t, await run(['keys', 'revoke', randomUUID()]), /no key has id/, 'an unknown key id')
  })

  await t.test('webhooks list, disable and enable', async (t) => {
    const made = await inspect(backend, async (database) => {
      const first = await insertEndpoint(database.db, { apiKeyId: keys.alpha!.id, url: 'https://hooks.example.com/a', events: ['*'], description: null, secret: 'whsec_c2VjcmV0' })
      const second = await insertEndpoint(database.db, { apiKeyId: keys.delta!.id, url: 'https://hooks.example.com/d', events: ['order.*'], description: 'delta', secret: 'whsec_c2VjcmV0' })
      return [first, second]
    })
    const all = json(t, await run(['webhooks', 'list', '--json']), 'webhooks list')
    t.equal(all.length, 2)
    t.strictSame(Object.keys(all[0]), ['id', 'apiKeyId', 'url', 'events', 'description', 'status', 'disabledReason', 'createdAt'], 'exactly the documented fields')
    t.notOk(JSON.stringify(all).includes('whsec_'), 'never a secret')
    t.match(json(t, await run(['webhooks', 'list', '--key', keys.delta!.id, '--json']), 'webhooks list --key'), [{ id: made[1]!.id, apiKeyId: keys.delta!.id, events: ['order.*'], status: 'enabled' }])
    t.strictSame(json(t, await run(['webhooks', 'disable', made[0]!.id, '--json']), 'disable'), { id: made[0]!.id, status: 'disabled' })
    const text = await run(['webhooks', 'list'])
    t.equal(text.code, 0)
    t.match(text.stdout, new RegExp(`${made[0]!.id} {2}disabled .*https://hooks\\.example\\.com/a {2}\\(Disabled by the operator\\)`))
    t.strictSame(json(t, await run(['webhooks', 'enable', made[0]!.id, '--json']), 'enable'), { id: made[0]!.id, status: 'enabled' })
    t.match(json(t, await run(['webhooks', 'list', '--key', keys.alpha!.id, '--json']), 'after enable'), [{ status: 'enabled', disabledReason: null }])
    refused(t, await run(['webhooks', 'disable', randomUUID()]), /no webhook endpoint has id/, 'an unknown endpoint')
  })

  // Each look into the database opens it (seconds for the embedded one): a few, each doing much.
  let catalogBefore = ''
  await t.test('catalog import from a file and from stdin', async (t) => {
    const file = join(work, 'catalog.json')
    await writeFile(file, JSON.stringify(catalogFile()))
    t.strictSame(json(t, await run(['catalog', 'import', file, '--json']), 'import FILE'), { categories: 1, brands: 1, products: 2, created: 2, updated: 0, unchanged: 0, removed: 0 })

    const changed = catalogFile()
    changed.products = [{ ...changed.products![0]!, name: 'Ethiopia Yirgacheffe 250 g, new crop', price: 13.9 }]
    const fromStdin = await run(['catalog', 'import', '-'], { input: `\uFEFF${JSON.stringify(changed, null, 2)}` })
    t.equal(fromStdin.code, 0, fromStdin.stderr)
    t.equal(fromStdin.stdout, 'imported 1 products: 0 created, 1 updated, 0 unchanged, 0 removed (1 categories, 1 brands)\n', 'one summary line')
    t.equal(fromStdin.stderr, '', 'no progress when stderr is not a terminal')
    catalogBefore = await inspect(backend, async (database) => {
      const rows = await execute<{ name: string, price: string }>(database.db, sql`select name, price::text from products order by name`)
      t.strictSame([...rows], [{ name: 'Espresso Blend 1 kg', price: '29.99' }, { name: 'Ethiopia Yirgacheffe 250 g, new crop', price: '13.90' }])
      return catalogSnapshot(database)
    })
  })

  await t.test('a bad catalogue file exits 2 naming the JSON path, and changes nothing', async (t) => {
    const bad = catalogFile()
    bad.categories![0]!.name = 'Renamed'
    ;(bad.products![1] as { price: unknown }).price = 'cheap'
    const badFile = join(work, 'bad.json')
    await writeFile(badFile, JSON.stringify(bad))
    const notJson = join(work, 'broken.json')
    await writeFile(notJson, '{"products": [')
    const unknownCategory = catalogFile()
    unknownCategory.categories![0]!.name = 'Renamed'
    unknownCategory.products![0]!.price = 1
    unknownCategory.products![1]!.categoryIds = ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c99']

    // Refused before the database is opened, so these may run side by side.
    const [shape, broken, missing] = await Promise.all([
      run(['catalog', 'import', badFile, '--json']),
      run(['catalog', 'import', notJson]),
      run(['catalog', 'import', join(work, 'missing.json')])
    ])
    refused(t, shape, 'products[1].price: must be a number', 'a price that is not a number')
    refused(t, broken, '(root): not valid JSON', 'a file that is not JSON')
    refused(t, missing, /cannot read .*missing\.json/, 'a file that does not exist')
    // Found only inside the import's transaction, after the categories were written.
    refused(t, await run(['catalog', 'import', '-', '--json'], { input: JSON.stringify(unknownCategory) }),
      'products[1].categoryIds[0]: no category has id 3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c99', 'an unknown category')
    t.equal(await inspect(backend, catalogSnapshot), catalogBefore, 'the store is unchanged')
  })

  await t.test('catalog demo, maintenance, settings and order status', async (t) => {
    t.strictSame(json(t, await run(['settings', 'list', '--json']), 'settings list, nothing set'), { deliveryFee: 0, defaultCountry: null, maintenance: false })
    t.strictSame(json(t, await run(['catalog', 'demo', '--json']), 'catalog demo'), { categories: 5, brands: 3, products: 37, created: 37, updated: 0, unchanged: 0, removed: 0 })
    t.strictSame(json(t, await run(['maintenance', 'on', '--json']), 'maintenance on'), { maintenance: true })
    t.strictSame(json(t, await run(['settings', 'set', 'deliveryFee', '4.99', '--json']), 'deliveryFee'), { deliveryFee: 4.99 })
    const country = await run(['settings', 'set', 'defaultCountry', 'US'])
    t.equal(country.code, 0)
    t.match(country.stdout, 'defaultCountry = US')
    const settings = json(t, await run(['settings', 'list', '--json']), 'settings list')
    t.strictSame(settings, { deliveryFee: 4.99, defaultCountry: 'US', maintenance: true })
    t.equal(typeof settings.deliveryFee, 'number', 'deliveryFee is a JSON number')
    const statusOn = await run(['maintenance', 'status'])
    t.strictSame(statusOn, { code: 0, stdout: 'maintenance is on\n', stderr: '' }, 'maintenance status, text')

    const orderNumber = await inspect(backend, async (database) => {
      const [products] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from products`)
      t.equal(products!.n, 37 + 2, 'the demo products beside the imported ones')
      const settings = await execute<{ name: string, value: unknown }>(database.db, sql`select name, value from store_settings`)
      t.strictSame(Object.fromEntries(settings.map((r) => [r.name, r.value])), { maintenance: true, deliveryFee: '4.99', defaultCountry: 'US' }, 'the settings stored')
      const [order] = await execute<{ n: string }>(database.db, sql`insert into orders
        (id, order_number, api_key_id, status, total, delivery_fee, final_total, products_count, customer_name)
        values (${randomUUID()}, nextval('order_number_seq'), ${keys.alpha!.id}, 'pending', 10, 0, 10, 1, 'Ada')
        returning order_number::text as n`)
      return order!.n
    })
    t.strictSame(json(t, await run(['maintenance', 'off', '--json']), 'maintenance off'), { maintenance: false })
    t.strictSame(json(t, await run(['maintenance', 'status', '--json']), 'maintenance status'), { maintenance: false })
    t.strictSame(await run(['settings', 'list']), { code: 0, stdout: 'deliveryFee = 4.99\ndefaultCountry = US\nmaintenance = off\n', stderr: '' }, 'settings list, text')
    t.match(json(t, await run(['orders', 'set-status', orderNumber, 'confirmed', '--json']), 'set-status'), { orderNumber, status: 'confirmed' })
    refused(t, await run(['orders', 'set-status', orderNumber, 'delivered']), /is confirmed: it cannot go to delivered; it can go to processing or cancelled/, 'a forbidden transition')

    const [abc, negative, decimals, xx] = await Promise.all([
      run(['settings', 'set', 'deliveryFee', 'abc']),
      run(['settings', 'set', 'deliveryFee', '-1', '--json']),
      run(['settings', 'set', 'deliveryFee', '1.234']),
      run(['settings', 'set', 'defaultCountry', 'XX'])
    ])
    refused(t, abc!, /deliveryFee must be an amount.*got abc/, 'deliveryFee abc')
    refused(t, negative!, /deliveryFee must be an amount.*got -1/, 'deliveryFee -1')
    refused(t, decimals!, /deliveryFee must be an amount.*got 1\.234/, 'deliveryFee 1.234')
    refused(t, xx!, /defaultCountry must be an ISO 3166 alpha-2 code.*got XX/, 'defaultCountry XX')
  })

  await t.test('catalog import --replace makes the catalogue exactly the file', async (t) => {
    const file = join(work, 'replace.json')
    await writeFile(file, JSON.stringify(catalogFile()))
    // The stdin import above renamed one product; the demo added 37.
    t.strictSame(json(t, await run(['catalog', 'import', file, '--replace', '--json']), 'import --replace'),
      { categories: 1, brands: 1, products: 2, created: 0, updated: 1, unchanged: 1, removed: 37 })
    t.strictSame(await run(['catalog', 'import', file, '--replace']),
      { code: 0, stdout: 'imported 2 products: 0 created, 0 updated, 2 unchanged, 0 removed (1 categories, 1 brands)\n', stderr: '' }, 'again: nothing to do')
    await inspect(backend, async (database) => {
      const rows = await execute<{ name: string }>(database.db, sql`select name from products order by name`)
      t.strictSame(rows.map((r) => r.name), ['Espresso Blend 1 kg', 'Ethiopia Yirgacheffe 250 g'])
      const events = await execute<{ type: string, n: number }>(database.db, sql`select type, count(*)::int as n from change_events where type like 'product.%' group by type order by type`)
      t.strictSame([...events], [{ type: 'product.created', n: 2 + 37 }, { type: 'product.deleted', n: 37 }, { type: 'product.updated', n: 2 }], 'one event per product created, changed, removed')
    })
  })

  await t.test('bad calls are refused before the database is opened', async (t) => {
    const [scope, badDate, port, command] = await Promise.all([
      run(['keys', 'create', '--name', 'x', '--scopes', 'products:list,orders:delete', '--json']),
      run(['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--expires-at', '2027-13-01']),
      run(['keys', 'list', '--json'], { env: { PORT: 'abc' } }),
      run(['frobnicate'])
    ])
    refused(t, scope!, /unknown scope orders:delete; scopes are products:list, products:find, orders:create, orders:list, orders:find/, 'an unknown scope')
    refused(t, badDate!, /--expires-at must be an ISO 8601 date.*got 2027-13-01/, 'a bad --expires-at')
    refused(t, port!, /invalid configuration: PORT/, 'PORT=abc')
    refused(t, command!, /^storefront: unknown command 'frobnicate' \(see storefront --help\)\n$/, 'an unknown command')
  })
}

// More refusals, checked in this process: each would cost a spawn, and none opens the database.
t.test('bad calls refused in the command itself', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sf-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const saved = { DATA_DIR: process.env.DATA_DIR, DATABASE_URL: process.env.DATABASE_URL }
  process.env.DATA_DIR = join(dir, 'never')
  delete process.env.DATABASE_URL
  t.teardown(() => Object.assign(process.env, saved))
  const { exitCodeFor, run } = await import('../../cli/main.ts')
  const cases: Array<[string[], RegExp]> = [
    [['keys', 'create', '--scopes', 'products:list'], /--name is required/],
    [['keys', 'create', '--name', 'x'], /--scopes is required/],
    [['keys', 'create', '--name', 'x', '--scopes', ' , '], /at least one scope/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--expires-at', '2020-01-01T00:00:00Z'], /expiry must be in the future/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--expires-at', '2030-02-30'], /--expires-at must be an ISO 8601 date/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--expires-at', '2030-01-01T10:00'], /with a UTC offset/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--rate-limit', '0'], /rate limit must be a whole number.*got 0/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--rate-limit', '-5'], /rate limit must be a whole number.*got -5/],
    [['keys', 'revoke', 'not-a-guid'], /needs a key id.*got not-a-guid/],
    [['keys', 'activate'], /needs a key id/],
    [['keys', 'set-rate-limit', randomUUID(), 'lots'], /got lots/],
    // A negative number is a value, not an option: the value check names it.
    [['keys', 'set-rate-limit', randomUUID(), '-5'], /rate limit must be a whole number.*got -5/],
    [['keys', 'set-rate-limit', randomUUID()], /keys set-rate-limit needs ID and a number, or default/],
    [['keys', 'create', '--name'], /option '--name <name>' argument missing/],
    [['help', 'frobnicate'], /unknown command 'frobnicate'/],
    [['maintenance'], /storefront maintenance: a subcommand is needed\n\nUsage: storefront maintenance/],
    [['keys', 'list', 'extra'], /^storefront keys list: unexpected argument extra \(see storefront keys list --help\)$/],
    [['keys', 'list', '--colour'], /colour/],
    [['catalog', 'import'], /needs a FILE/],
    [['settings', 'set', 'currency', 'EUR'], /unknown setting currency/],
    [['settings', 'set', 'deliveryFee'], /needs NAME and VALUE/],
    [['settings', 'set', 'deliveryFee', '12345678901'], /deliveryFee must be an amount/],
    [['settings', 'set', 'defaultCountry', 'USA'], /defaultCountry must be an ISO 3166 alpha-2 code/],
    [['maintenance', 'maybe'], /^storefront maintenance: unknown command 'maybe' \(see storefront maintenance --help\)$/],
    [['orders', 'set-status', '100001', 'teleported'], /unknown status teleported/],
    [['keys', 'create', '--name', 'x', '--scopes', 'products:list', '--mode', 'sandbox'], /unknown mode sandbox; modes are live, test/],
    [['orders', 'purge-test', '--before', 'yesterday'], /--before must be an ISO 8601 date.*got yesterday/],
    [['webhooks', 'disable', 'not-a-guid'], /webhooks disable needs an endpoint id.*got not-a-guid/],
    [['webhooks', 'enable'], /webhooks enable needs an endpoint id/],
    [['webhooks', 'list', '--key', 'nope'], /webhooks list --key needs a key id.*got nope/],
    [[], /a command is needed/]
  ]
  for (const [argv, message] of cases) {
    const err = await run(argv).then(() => null, (e: unknown) => e)
    t.equal(await exitCodeFor(err), 2, `${argv.join(' ')}: exit code 2`)
    t.match((err as Error | null)?.message, message, `${argv.join(' ')}: says why`)
  }
  t.notOk(existsSync(join(dir, 'never')), 'no database was opened')
  t.equal(await exitCodeFor(new Error('connect ECONNREFUSED')), 1, 'other failures exit 1')
})

// Help and parse errors through the real command: what the operator's terminal shows.
t.test('help, --version and refused command lines, without a database', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sf-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const none: Backend = { name: 'none', env: { DATA_DIR: join(dir, 'never') }, open: () => Promise.reject(new Error('not opened here')) }
  const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  const [keysHelp, createHelp, importHelp, longVersion, shortVersion, group, command, option] = await Promise.all([
    storefront(none, ['keys', '--help']),
    storefront(none, ['keys', 'create', '--help']),
    storefront(none, ['catalog', 'import', '--help']),
    // Help and the version need no valid configuration.
    storefront(none, ['--version'], { env: { PORT: 'abc' } }),
    storefront(none, ['-V']),
    storefront(none, ['keys']),
    storefront(none, ['frobnicate', '--json']),
    storefront(none, ['keys', 'create', '--nmae', 'x', '--scopes', 'products:list'])
  ])
  const help = (result: Result, what: string) => {
    t.equal(result.code, 0, `${what}: exit code 0`)
    t.equal(result.stderr, '', `${what}: nothing on stderr`)
    return result.stdout
  }
  const keys = help(keysHelp, 'keys --help')
  t.match(keys, /^Usage: storefront keys \[options\] \[command\]\n/, 'keys --help: the usage of keys')
  for (const sub of ['create [options]', 'list [options]', 'roll [options] <ID>', 'revoke [options] <ID>', 'deactivate [options] <ID>', 'activate [options] <ID>', 'set-rate-limit [options] <ID> <N|default>']) {
    t.ok(keys.includes(`\n  ${sub} `), `keys --help lists ${sub}`)
  }
  t.notMatch(keys, /^\s+(serve|migrate|catalog)\b/m, 'keys --help is not the global usage')
  const create = help(createHelp, 'keys create --help')
  t.match(create, /^Usage: storefront keys create \[options\]\n/)
  for (const flag of ['--name <name>', '--scopes <list>', '--expires-at <iso>', '--rate-limit <n>', '--json', '-h, --help']) {
    t.ok(create.includes(`\n  ${flag} `), `keys create --help shows ${flag}`)
  }
  t.match(create, 'Scopes: products:list, products:find, orders:create, orders:list, orders:find, webhooks:manage')
  const catalogImport = help(importHelp, 'catalog import --help')
  t.match(catalogImport, /^Usage: storefront catalog import \[options\] <FILE>\n/)
  t.match(catalogImport, /--replace +also delete the products the file does not list/)
  t.match(catalogImport, /created, updated, unchanged and removed/)
  t.match(catalogImport, /\n {2}FILE +the catalogue file, or - for stdin\n/)
  t.match(catalogImport, /\n {2}--json +print one JSON document on stdout\n/)
  t.strictSame(longVersion, { code: 0, stdout: `${version}\n`, stderr: '' }, '--version prints the package version')
  t.strictSame(shortVersion, { code: 0, stdout: `${version}\n`, stderr: '' }, '-V prints the package version')

  t.equal(group.code, 2, 'keys without a subcommand: exit code 2')
  t.equal(group.stdout, '', 'keys without a subcommand: nothing on stdout')
  t.equal(group.stderr, `storefront keys: a subcommand is needed\n\n${keys}`, 'keys without a subcommand: the keys help on stderr')
  t.strictSame(command, { code: 2, stdout: '', stderr: "storefront: unknown command 'frobnicate' (see storefront --help)\n" }, 'an unknown command: one line')
  t.strictSame(option, { code: 2, stdout: '', stderr: "storefront keys create: unknown option '--nmae', did you mean --name? (see storefront keys create --help)\n" }, 'an unknown option: one line')
  t.notOk(existsSync(join(dir, 'never')), 'no database was opened')
})

t.test('the storefront command', async (t) => {
  const adminUrl = process.env.TEST_DATABASE_URL
  const backend = adminUrl ? await postgresql(t, adminUrl) : await embedded(t)
  await operatorSuite(t, backend)
  if (adminUrl) {
    t.notOk(existsSync(backend.env.DATA_DIR!), 'with DATABASE_URL set, no embedded database was made')
    // The embedded database too, briefly: CI always sets TEST_DATABASE_URL.
    await t.test('on the embedded database', async (t) => {
      const pglite = await embedded(t)
      const created = json(t, await storefront(pglite, ['keys', 'create', '--name', 'local', '--scopes', 'products:list', '--json']), 'keys create')
      t.match(created, { key: /^sk_/ })
      t.strictSame(json(t, await storefront(pglite, ['catalog', 'demo', '--json']), 'catalog demo'), { categories: 5, brands: 3, products: 37, created: 37, updated: 0, unchanged: 0, removed: 0 })
      t.match(json(t, await storefront(pglite, ['keys', 'list', '--json']), 'keys list'), [{ id: created.id, state: 'active' }])
    })
  }
})

// util-linux `script` gives the command a terminal. CI installs it (.ci/run) and fails without
// it; elsewhere a machine without it skips this one case.
const script = ['/usr/bin/script', '/bin/script'].find((path) => existsSync(path))
t.test('catalog import shows its progress on a terminal', { skip: script || process.env.CI ? false : 'no `script` command to give the import a terminal' }, async (t) => {
  if (script === undefined) {
    t.fail('CI needs `script` (util-linux, Debian package bsdutils) to give the import a terminal')
    return
  }
  const backend = await embedded(t)
  const file = join(backend.env.DATA_DIR!, 'many.json')
  const products = Array.from({ length: 2500 }, (_, i) => ({ id: randomUUID(), name: `Bulk ${i}`, price: 1, isAvailable: true }))
  await writeFile(file, JSON.stringify({ products }))
  const result = await new Promise<Result>((resolve, reject) => {
    const env = cleanEnv({ LOG_LEVEL: 'warn', ...backend.env })
    const child = spawn(script, ['-qec', `'${process.execPath}' '${BIN}' catalog import '${file}'`, '/dev/null'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr: '' }))
  })
  t.equal(result.code, 0, result.stdout)
  // Rewritten in place (carriage return, erase line) as each 1,000 products of the file are
  // read and checked, then erased.
  const shown = result.stdout.replaceAll('\r\u001b[K', '<erase>')
  t.match(shown, /^<erase>importing: 1,\d{3} products read, [\d,]+ a second<erase>importing: 2,\d{3} products read, [\d,]+ a second<erase>importing: 2,500 products read, [\d,]+ a second<erase>/)
  t.match(shown, /<erase>imported 2500 products: 2500 created, 0 updated, 0 unchanged, 0 removed \(0 categories, 0 brands\)\r?\n$/, 'the line erased, then the summary')
})
