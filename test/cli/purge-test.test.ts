// Test mode as an operator meets it, through `node bin/storefront.js`: keys create --mode test,
// keys list showing each key's mode, and orders purge-test deleting test orders (with their
// items, their replays and their share of the counts) and never a live one.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import { insertOrder, type NewOrder } from '../../db/orders.ts'
import { createEmptyDatabase } from '../helper.ts'
import { runStorefront, type Result } from './spawn.ts'

t.setTimeout(300_000)

const adminUrl = process.env.TEST_DATABASE_URL
let env: Record<string, string>
let open: () => Promise<Database>
if (adminUrl) {
  const url = await createEmptyDatabase(t, 'sf_cli_purge', adminUrl)
  env = { DATABASE_URL: url }
  open = () => openDatabase({ url, poolSize: 1 })
} else {
  const dir = await mkdtemp(join(tmpdir(), 'sf-cli-purge-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  env = { DATA_DIR: dir }
  open = () => openDatabase({ dataDir: dir })
}
const run = (args: string[]) => runStorefront(env, args)

function json (t: Test, result: Result, what: string): any {
  t.equal(result.code, 0, `${what}: exit code 0${result.code === 0 ? '' : ` (stderr: ${result.stderr})`}`)
  return JSON.parse(result.stdout)
}

/** Works on the database between commands (the embedded one belongs to one process at a time). */
async function inspect<T> (use: (database: Database) => Promise<T>): Promise<T> {
  const database = await open()
  try {
    return await use(database)
  } finally {
    await database.close()
  }
}

if (adminUrl) json(t, await run(['migrate', '--json']), 'migrate')

const keys: Record<'live' | 'test', { id: string, key: string }> = {} as never

t.test('keys create --mode test makes a sk_test_ key; keys list shows every key\'s mode', async (t) => {
  const test = json(t, await run(['keys', 'create', '--name', 'sandbox', '--scopes', 'orders:create,orders:list', '--mode', 'test', '--json']), 'create test')
  t.strictSame(Object.keys(test), ['id', 'name', 'key', 'scopes', 'expiresAt', 'mode'])
  t.match(test, { key: /^sk_test_[A-Za-z0-9_-]{43}$/, mode: 'test' })
  const live = json(t, await run(['keys', 'create', '--name', 'shop', '--scopes', 'orders:create', '--json']), 'create live')
  t.match(live, { key: /^sk_[A-Za-z0-9_-]{43}$/, mode: 'live' })
  t.notMatch(live.key, /^sk_test_/)
  Object.assign(keys, { live, test })

  const text = await run(['keys', 'create', '--name', 'another sandbox', '--scopes', 'orders:list', '--mode', 'test'])
  t.equal(text.code, 0)
  t.match(text.stdout, /^created test key [0-9a-f-]{36} \(another sandbox\)\nsk_test_[A-Za-z0-9_-]{43}\n/)

  const list = json(t, await run(['keys', 'list', '--json']), 'list')
  const modes = Object.fromEntries(list.map((k: { name: string, mode: string }) => [k.name, k.mode]))
  t.same(modes, { sandbox: 'test', shop: 'live', 'another sandbox': 'test' })
  const listed = await run(['keys', 'list'])
  t.match(listed.stdout, new RegExp(`${test.id}  active    test  sandbox`))
  t.match(listed.stdout, new RegExp(`${live.id}  active    live  shop`))
})

t.test('orders purge-test deletes test orders created before the instant, and never a live one', async (t) => {
  const old = new Date('2026-01-10T00:00:00Z')
  const recent = new Date()
  const made = await inspect(async (database) => {
    const place = (apiKeyId: string, mode: NewOrder['mode'], at: Date) => insertOrder(database.db, crypto.randomUUID(), {
      apiKeyId,
      mode,
      total: '2.00',
      deliveryFee: '0.00',
      finalTotal: '2.00',
      productsCount: 1,
      customerName: 'Ada',
      customerPhone: '+14155550123',
      note: null,
      address: null,
      items: [{ productId: crypto.randomUUID(), combinationId: null, name: 'Mug', quantity: 1, singlePrice: '2.00', totalPrice: '2.00', taken: 0 }]
    }, at)
    const orders = {
      oldTests: [await place(keys.test.id, 'test', old), await place(keys.test.id, 'test', old)],
      recentTest: await place(keys.test.id, 'test', recent),
      oldLive: await place(keys.live.id, 'live', old),
      recentLive: await place(keys.live.id, 'live', recent)
    }
    // A stored Idempotency-Key answer of an old test order: it would replay an order that is gone.
    await execute(database.db, sql`insert into idempotency_keys (api_key_id, key, request_hash, status_code, response_body, response_version, response_headers, expires_at)
      values (${keys.test.id}, 'old-test', 'h', 201, ${JSON.stringify(orders.oldTests[0])}::jsonb, 3, '{"location":"x"}'::jsonb, now() + interval '1 hour'),
             (${keys.live.id}, 'old-live', 'h', 201, ${JSON.stringify(orders.oldLive)}::jsonb, 3, '{"location":"x"}'::jsonb, now() + interval '1 hour')`)
    return orders
  })
  t.match(made.oldTests[0], { mode: 'test', orderNumber: /^T\d+$/ })

  t.strictSame(json(t, await run(['orders', 'purge-test', '--before', '2026-02-01', '--json']), 'purge before February'), { deleted: 2 })
  await inspect(async (database) => {
    const left = await execute<{ id: string }>(database.db, sql`select id from orders order by order_number`)
    t.same(new Set(left.map((r) => r.id)), new Set([made.recentTest.id, made.oldLive.id, made.recentLive.id]), 'the old test orders went, nothing else')
    const items = await execute<{ order_id: string }>(database.db, sql`select order_id from order_items`)
    t.equal(items.length, 3, 'their items went with them')
    const replays = await execute<{ key: string }>(database.db, sql`select key from idempotency_keys`)
    t.same(replays.map((r) => r.key), ['old-live'], 'their stored replays went; a live one stays')
    const counts = await execute<{ api_key_id: string, n: number }>(database.db, sql`select api_key_id, sum(count)::int as n from order_counts group by api_key_id`)
    t.same(Object.fromEntries(counts.map((c) => [c.api_key_id, c.n])), { [keys.test.id]: 1, [keys.live.id]: 2 }, 'the keys\' order counts match what is left')
  })

  const now = await run(['orders', 'purge-test'])
  t.equal(now.code, 0, now.stderr)
  t.match(now.stdout, /^deleted 1 test order created before \d{4}-\d\d-\d\dT/, 'by default, every test order up to now')
  t.strictSame(json(t, await run(['orders', 'purge-test', '--json']), 'nothing left to purge'), { deleted: 0 })
  await inspect(async (database) => {
    const left = await execute<{ id: string, mode: string }>(database.db, sql`select id, mode from orders`)
    t.same(new Set(left.map((r) => r.id)), new Set([made.oldLive.id, made.recentLive.id]), 'the live orders are all there')
  })
})
