// How a stock write answers what the database does to it: contention (a deadlock, a
// serialization failure) is retried and at worst answers 503 with Retry-After, never a 500 and
// never a partial order or hold; a long wait for a product's lock is not idempotency_key_in_use;
// a failure after the commit is logged, never answered; an import reading a slow file holds no
// lock anyone else waits for.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { STOCK_RETRY } from '../../config.ts'
import { execute } from '../../db/client.ts'
import type { JsonStreamEntry } from '../../lib/json-stream.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { placeOrder } from '../../services/place-order.ts'
import { holdStock, releaseReservation } from '../../services/reservations.ts'
import { StockKeeper } from '../../services/stock.ts'
import { buildTestApp, createTestDatabase, expectError, importProducts, makeKey, makeProduct, orderBody, orderSnapshot, postOrder, productStock, sleep, until, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const pgOnly = usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite runs one transaction at a time'

/**
 * Makes the next `times` inserts into `table` fail with `code`, as PostgreSQL reports a deadlock
 * (40P01) or a serialization failure (40001). A sequence counts them: it is not rolled back
 * with the failed transaction.
 */
async function failNext (db: Parameters<typeof execute>[0], table: 'order_items' | 'reservation_items', code: string, times: number) {
  await db.execute(sql.raw(`drop trigger if exists contention on ${table}`))
  await db.execute(sql.raw('drop sequence if exists contention_seq'))
  await db.execute(sql.raw('create sequence contention_seq'))
  await db.execute(sql.raw(`create or replace function contention() returns trigger language plpgsql as $$
    begin
      if nextval('contention_seq') <= ${times} then raise exception 'contention (test)' using errcode = '${code}'; end if;
      return null;
    end $$`))
  await db.execute(sql.raw(`create trigger contention before insert on ${table} for each statement execute function contention()`))
  return async () => (await execute<{ n: string }>(db, sql`select last_value::text as n from contention_seq`))[0]!.n
}

t.test('a deadlock or a serialization failure is retried: the order is placed once', async (t) => {
  const app = await buildTestApp(t, { env: UNLIMITED })
  const { key } = await makeKey(app)
  const mug = makeProduct({ quantity: 5 })
  await importProducts(app, [mug])
  const attempts = await failNext(app.database.db, 'order_items', '40P01', 1)
  const res = await postOrder(app, key, orderBody([{ productId: mug.id, quantity: 2 }]))
  t.equal(res.statusCode, 201, `placed after one retry (${res.body.slice(0, 120)})`)
  t.equal(await attempts(), '2', 'two attempts')
  t.equal(await productStock(app, mug.id), 3, 'the stock taken once')
  t.equal((await orderSnapshot(app)).orders, 1, 'one order')

  await failNext(app.database.db, 'reservation_items', '40001', 2)
  const held = await hold(app, key, { items: [{ productId: mug.id, quantity: 1 }] })
  t.equal(held.statusCode, 201, 'a hold too, after two serialization failures')
  t.equal(await productStock(app, mug.id), 2, 'its unit taken once')
})

t.test('contention that persists answers 503 with Retry-After, and nothing of the order remains', async (t) => {
  const app = await buildTestApp(t, { env: UNLIMITED })
  const { key } = await makeKey(app)
  const mug = makeProduct({ quantity: 5 })
  await importProducts(app, [mug])
  const attempts = await failNext(app.database.db, 'order_items', '40P01', 1000)
  const before = await orderSnapshot(app)
  const res = await postOrder(app, key, orderBody([{ productId: mug.id, quantity: 2 }]), { 'idempotency-key': 'contended' })
  expectError(t, res, 503, 'service_unavailable', { message: /busy/ })
  t.equal(res.headers['retry-after'], '1', 'Retry-After')
  t.equal(await attempts(), String(STOCK_RETRY.attempts), `${STOCK_RETRY.attempts} attempts, then the answer`)
  t.same(await orderSnapshot(app), before, 'no order, no stock taken, no idempotency record')
  await app.database.db.execute(sql.raw('drop trigger contention on order_items'))
  const retried = await postOrder(app, key, orderBody([{ productId: mug.id, quantity: 2 }]), { 'idempotency-key': 'contended' })
  t.equal(retried.statusCode, 201, 'the client\'s retry with the same key places it')
  t.notOk(retried.headers['idempotent-replayed'], 'as a first request: nothing was stored before')
})

t.test('waiting for a product\'s lock is not waiting for the Idempotency-Key', { skip: pgOnly }, async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 10 })
  const app = await buildTestApp(t, { database, env: { ...UNLIMITED, IDEMPOTENCY_LOCK_TIMEOUT_MS: '300' } })
  const { key } = await makeKey(app)
  const mug = makeProduct({ quantity: 5 })
  await importProducts(app, [mug])
  // Another session holds the product's row (as an import's write phase would) until the second
  // request has its answer: a fixed time raced that answer on a loaded CI machine.
  const other = postgres(url!, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  let locked!: () => void
  const productLocked = new Promise<void>((resolve) => { locked = resolve })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  const holding = other.begin(async (tx) => {
    await tx`select id from products where id = ${mug.id} for update`
    locked()
    await released
  })
  await productLocked
  const body = orderBody([{ productId: mug.id }])
  const first = postOrder(app, key, body, { 'idempotency-key': 'waits' })
  // Once its claim has written the key's row (the transaction holds the table's row lock), it
  // has the key; it then waits for the product behind the other session.
  await until('the first order claims its key', async () => {
    const [row] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation
      where l.database = (select oid from pg_database where datname = current_database()) and c.relname = 'idempotency_keys' and l.mode = 'RowExclusiveLock' and l.granted and l.pid <> pg_backend_pid()`)
    return row!.n > 0 ? true : undefined
  })
  // The same key meanwhile: the first request is still running, so this one is told to retry.
  const second = await postOrder(app, key, body, { 'idempotency-key': 'waits' })
  release()
  expectError(t, second, 409, 'idempotency_key_in_use')
  t.equal(second.headers['retry-after'], '1', 'with Retry-After')
  const placed = await first
  await holding
  t.equal(placed.statusCode, 201, `the first waited for the product past the key's 300 ms and was placed (${placed.body.slice(0, 100)})`)
  t.equal(await productStock(app, mug.id), 4, 'once')
})

t.test('a failure after the commit is logged and never answered: the order, the hold and the release stand', async (t) => {
  const app = await buildTestApp(t, { env: UNLIMITED })
  const { id: apiKeyId } = await makeKey(app)
  const mug = makeProduct({ quantity: 5 })
  await importProducts(app, [mug])
  // The instance's cache cannot be told (in a server: the catalogue version cannot move).
  const warnings: string[] = []
  const stock = new StockKeeper(app.database, {
    onChanged: async () => { throw new Error('the cache is gone') },
    log: { warn: (_details, message) => { warnings.push(message) } }
  })
  const placed = await placeOrder(stock, { apiKeyId, mode: 'live', body: orderBody([{ productId: mug.id }]), idempotencyKey: undefined, settings: app.store.settings, locationOf: (id) => id })
  t.equal(placed.replayed, false, 'the order is answered')
  t.equal(await productStock(app, mug.id), 4, 'and committed')
  t.match(warnings, [/could not tell the catalogue cache/], 'the failure is in the log')
  const held = await holdStock(stock, { apiKeyId, mode: 'live', body: { items: [{ productId: mug.id }] }, idempotencyKey: undefined, locationOf: (id) => id })
  await releaseReservation(stock, apiKeyId, held.reservation.id)
  t.equal(await productStock(app, mug.id), 4, 'a hold and its release too')
  t.equal(warnings.length, 3, 'each logged')
})

t.test('an import reading a slow file holds no lock: holds, orders on them and releases go on', { skip: pgOnly }, async (t) => {
  const { database } = await createTestDatabase(t, { poolSize: 10 })
  const app = await buildTestApp(t, { database, env: { ...UNLIMITED, IDEMPOTENCY_LOCK_TIMEOUT_MS: '300', RESERVATION_SWEEP_MS: '100' } })
  const { key } = await makeKey(app)
  const mug = makeProduct({ quantity: 10 })
  const vase = makeProduct({ quantity: 10 })
  await importProducts(app, [mug, vase])
  const holds = await Promise.all([1, 2, 3].map(() => hold(app, key, { items: [{ productId: mug.id, quantity: 1 }] })))
  t.same(holds.map((h) => h.statusCode), [201, 201, 201])
  const [toOrder, toRelease, toExpire] = holds.map((h) => h.json<Reservation>().id) as [string, string, string]

  // The file arrives slowly: its second product only after 1.5 s.
  let reading = true
  async function * slowFile (): AsyncGenerator<JsonStreamEntry> {
    yield { key: 'products', index: 0, value: { ...mug, name: 'Mug renamed' } }
    await sleep(1500)
    yield { key: 'products', index: 1, value: vase }
    reading = false
  }
  const importing = importCatalog(database, slowFile())
  await sleep(200)
  await execute(database.db, sql`update reservations set expires_at = now() where id = ${toExpire}::uuid`)
  const ordered = await postOrder(app, key, orderBody([{ productId: mug.id }], { reservationId: toOrder }), { 'idempotency-key': 'during-import' })
  t.equal(ordered.statusCode, 201, `an order consuming a hold is placed while the file is read (${ordered.body.slice(0, 100)})`)
  t.equal((await release(app, key, toRelease)).statusCode, 204, 'a release too')
  const expired = await (async () => {
    // The file's second product comes 1.5 s after its first: the sweep has a second at most.
    for (let i = 0; i < 40; i++) {
      const [row] = await execute<{ status: string }>(database.db, sql`select status from reservations where id = ${toExpire}::uuid`)
      if (row!.status === 'expired') return true
      await sleep(25)
    }
    return false
  })()
  t.ok(expired, 'and the sweep expires a hold')
  t.ok(reading, 'all while the file was still being read')
  const summary = await importing
  t.match(summary, { products: 2, updated: 1, unchanged: 1 }, 'the import then writes what changed')
  t.equal(await productStock(app, mug.id), 10, 'the file\'s quantity is the stock (no hold is left)')
})
