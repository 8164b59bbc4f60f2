// The deadline of the writes an integrator sends, over real HTTP: a request with a body is
// where Fastify 5.12's own handler deadline does not hold (it ends when the body has been
// read). Past it (ORDER_TIMEOUT_MS for orders and holds, HANDLER_TIMEOUT_MS for the rest) a
// write that has not begun to commit answers 503 and leaves nothing behind, so a retry is
// safe; one whose commit has begun answers what it wrote, and one whose commit PostgreSQL
// refused wrote nothing and is retried only within the deadline. Another connection holds
// the row's lock, or a deferred trigger slows or refuses the commit, on the real PostgreSQL.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute } from '../../db/client.ts'
import { SCOPES } from '../../lib/api-key-secret.ts'
import {
  authHeaders, buildTestApp, createTestDatabase, expectError, importProducts, makeKey, makeProduct, orderBody, orderSnapshot, productStock, sleep, UNLIMITED, usingPostgres, type Answer
} from '../helper.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const DEADLINE_MS = 1000
const needsPostgres = usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL: a second connection holds the lock' }

interface Rig { app: App, base: string, key: string, keyId: string, other: postgres.Sql, mug: { id: string } }

async function rig (t: T): Promise<Rig> {
  const { database, url } = await createTestDatabase(t)
  const app = await buildTestApp(t, {
    database,
    env: { ...UNLIMITED, ORDER_TIMEOUT_MS: String(DEADLINE_MS), HANDLER_TIMEOUT_MS: String(DEADLINE_MS), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1:9', EVENT_PUBLISH_MS: '3600000' }
  })
  const { key, id: keyId } = await makeKey(app)
  const mug = makeProduct({ name: 'Deadline Mug', quantity: 10 })
  await importProducts(app, [mug])
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address() as { port: number }
  const other = postgres(url!, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  return { app, base: `http://127.0.0.1:${address.port}/external/v1`, key, keyId, other, mug }
}

/** A request over HTTP (with the rig's key unless another is given), answered as `app.inject` answers, with the time it took. */
async function send (rig: Rig, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer & { ms: number }> {
  const started = Date.now()
  const res = await fetch(`${rig.base}${path}`, {
    method,
    headers: { ...authHeaders(rig.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  return { statusCode: res.status, body: text, headers: Object.fromEntries(res.headers), json: <J>() => JSON.parse(text) as J, ms: Date.now() - started }
}

/** Holds a row's lock (the product's, as a stock write takes it, unless another table is named) in another transaction for `ms`. */
async function holdLock (rig: Rig, ms: number, row: { table: string, id: string } = { table: 'products', id: rig.mug.id }): Promise<{ released: Promise<void> }> {
  let locked!: () => void
  const isLocked = new Promise<void>((resolve) => { locked = resolve })
  const released = rig.other.begin(async (tx) => {
    await tx.unsafe(`select id from ${row.table} where id = $1 for update`, [row.id])
    locked()
    await sleep(ms)
  }).then(() => {})
  await isLocked
  return { released }
}

/** Waits until no statement of the app's runs or waits any more: its abandoned transaction has ended. */
async function quiet (rig: Rig): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const [row] = await rig.other`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`
    if (row!.n === 0) return
    await sleep(25)
  }
  throw new Error('the app\'s transactions did not end')
}

async function reservationCount (app: App): Promise<{ active: number, all: number }> {
  const [row] = await execute<{ active: number, all: number }>(app.database.db,
    sql`select count(*) filter (where status = 'active')::int as active, count(*)::int as "all" from reservations`)
  return row!
}

function expectDeadline (t: T, res: Answer & { ms: number }, what: string) {
  expectError(t, res, 503, 'service_unavailable', { message: /nothing was written/, what })
  t.equal(res.headers['retry-after'], '1', `${what}: Retry-After`)
  t.ok(res.ms >= DEADLINE_MS - 50 && res.ms < DEADLINE_MS + 1500, `${what}: answered at the deadline (${res.ms} ms)`)
}

t.test('an order still waiting for its stock at the deadline answers 503 and writes nothing; the same Idempotency-Key then orders once', needsPostgres, async (t) => {
  const r = await rig(t)
  const before = await orderSnapshot(r.app)
  const lock = await holdLock(r, DEADLINE_MS + 1000)
  const late = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 3 }]), { 'idempotency-key': 'deadline-1' })
  expectDeadline(t, late, 'the order')
  // The lock goes; the abandoned transaction gets it, and rolls back at its commit.
  await lock.released
  await quiet(r)
  t.same(await orderSnapshot(r.app), before, 'no order, no stock taken, no idempotency record')

  const retried = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 3 }]), { 'idempotency-key': 'deadline-1' })
  t.equal(retried.statusCode, 201, retried.body)
  t.equal(retried.headers['idempotent-replayed'], undefined, 'a new order, not a replay of anything')
  t.equal(await productStock(r.app, r.mug.id), 7, 'its stock taken once')
  t.equal((await orderSnapshot(r.app)).orders, before.orders + 1, 'one order')
})

t.test('an order whose commit began before the deadline answers 201 with what it wrote, however long the commit takes', needsPostgres, async (t) => {
  const r = await rig(t)
  // The commit of an order runs this trigger: it takes longer than the whole deadline.
  await r.other.unsafe(`create function slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(${(DEADLINE_MS + 800) / 1000}); return null; end $$;
    create constraint trigger slow_commit after insert on orders deferrable initially deferred for each row execute function slow_commit()`)
  const res = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 2 }]))
  t.equal(res.statusCode, 201, res.body)
  t.ok(res.ms > DEADLINE_MS + 500, `answered when the commit ended (${res.ms} ms)`)
  const order = res.json<{ id: string }>()
  t.equal(await productStock(r.app, r.mug.id), 8, 'the stock it answered for is taken')
  const [row] = await execute<{ n: number }>(r.app.database.db, sql`select count(*)::int as n from orders where id = ${order.id}`)
  t.equal(row!.n, 1, 'the order it answered is in the database')
})

t.test('a hold still waiting at the deadline answers 503 and holds nothing', needsPostgres, async (t) => {
  const r = await rig(t)
  const lock = await holdLock(r, DEADLINE_MS + 1000)
  const late = await send(r, 'POST', '/reservations', { items: [{ productId: r.mug.id, quantity: 4 }] })
  expectDeadline(t, late, 'the hold')
  await lock.released
  await quiet(r)
  t.same(await reservationCount(r.app), { active: 0, all: 0 }, 'no reservation')
  t.equal(await productStock(r.app, r.mug.id), 10, 'no stock held')
})

t.test('a release still waiting at the deadline answers 503 and the reservation still holds', needsPostgres, async (t) => {
  const r = await rig(t)
  const held = await send(r, 'POST', '/reservations', { items: [{ productId: r.mug.id, quantity: 4 }] })
  t.equal(held.statusCode, 201, held.body)
  const { id } = held.json<{ id: string }>()
  const lock = await holdLock(r, DEADLINE_MS + 1000)
  const late = await send(r, 'DELETE', `/reservations/${id}`)
  expectDeadline(t, late, 'the release')
  await lock.released
  await quiet(r)
  t.same(await reservationCount(r.app), { active: 1, all: 1 }, 'the reservation is still active')
  t.equal(await productStock(r.app, r.mug.id), 6, 'its units are still held')

  const retried = await send(r, 'DELETE', `/reservations/${id}`)
  t.equal(retried.statusCode, 204, 'released on the retry')
  t.equal(await productStock(r.app, r.mug.id), 10, 'and the units are back')
})

t.test('a webhook endpoint still waiting at the deadline answers 503 and is not created', needsPostgres, async (t) => {
  const r = await rig(t)
  // Creating an endpoint locks its key's row, to count the key's endpoints.
  const lock = await holdLock(r, DEADLINE_MS + 1000, { table: 'api_keys', id: r.keyId })
  const late = await send(r, 'POST', '/webhooks', { url: 'https://127.0.0.1:9/hooks' })
  expectDeadline(t, late, 'the creation')
  await lock.released
  await quiet(r)
  const [row] = await execute<{ n: number }>(r.app.database.db, sql`select count(*)::int as n from webhook_endpoints`)
  t.equal(row!.n, 0, 'no endpoint: a retry makes the only one')
})

t.test('a secret rotation still waiting at the deadline answers 503 and the secret does not change', needsPostgres, async (t) => {
  const r = await rig(t)
  const made = await send(r, 'POST', '/webhooks', { url: 'https://127.0.0.1:9/hooks' })
  t.equal(made.statusCode, 201, made.body)
  const { id, secret } = made.json<{ id: string, secret: string }>()
  const lock = await holdLock(r, DEADLINE_MS + 1000, { table: 'webhook_endpoints', id })
  const late = await send(r, 'POST', `/webhooks/${id}/rotate-secret`)
  expectDeadline(t, late, 'the rotation')
  await lock.released
  await quiet(r)
  const [row] = await execute<{ secret: string, previous: string | null }>(r.app.database.db,
    sql`select secret, previous_secret as previous from webhook_endpoints where id = ${id}`)
  t.same(row, { secret, previous: null }, 'the secret the integrator holds still signs alone: no secret it never saw')
})

t.test('a test order\'s status change still waiting at the deadline answers 503 and the status stays', needsPostgres, async (t) => {
  const r = await rig(t)
  const { key: testKey } = await makeKey(r.app, [...SCOPES], { mode: 'test' })
  const placed = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id }]), authHeaders(testKey))
  t.equal(placed.statusCode, 201, placed.body)
  const order = placed.json<{ id: string, orderNumber: string }>()
  const lock = await holdLock(r, DEADLINE_MS + 1000, { table: 'orders', id: order.id })
  const late = await send(r, 'POST', `/test/orders/${order.orderNumber}/status`, { status: 'confirmed' }, authHeaders(testKey))
  expectDeadline(t, late, 'the status change')
  await lock.released
  await quiet(r)
  const [row] = await execute<{ status: string, events: number }>(r.app.database.db, sql`select status,
    (select count(*)::int from change_events where type = 'order.status_changed') as events from orders where id = ${order.id}`)
  t.same(row, { status: 'pending', events: 0 }, 'still pending, and no order.status_changed')
})

/** A deferred trigger on orders: the first order's commit waits `sleepMs`, then PostgreSQL refuses it as contention (40001), as a serialization failure at commit would; the app retries. */
async function refuseFirstCommit (rig: Rig, sleepMs: number): Promise<void> {
  await rig.other.unsafe(`create sequence refused_commits;
    create function refuse_first_commit() returns trigger language plpgsql as $$ begin
      if nextval('refused_commits') = 1 then
        perform pg_sleep(${sleepMs / 1000});
        raise exception 'refused at commit' using errcode = '40001';
      end if;
      return null;
    end $$;
    create constraint trigger refuse_first_commit after insert on orders deferrable initially deferred for each row execute function refuse_first_commit()`)
}

t.test('an order whose commit was refused after the deadline passed is not tried again: 503, nothing written', needsPostgres, async (t) => {
  const r = await rig(t)
  const before = await orderSnapshot(r.app)
  // The commit began before the deadline, so the deadline waited for it; refused, it wrote nothing.
  await refuseFirstCommit(r, DEADLINE_MS + 300)
  const late = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 3 }]), { 'idempotency-key': 'refused-1' })
  expectError(t, late, 503, 'service_unavailable', { message: /nothing was written/, what: 'the order' })
  t.ok(late.ms >= DEADLINE_MS + 300 && late.ms < DEADLINE_MS + 1500, `answered when the refused commit ended (${late.ms} ms), not after a retry`)
  await quiet(r)
  t.same(await orderSnapshot(r.app), before, 'no order, no stock taken, no idempotency record')
  const [calls] = await r.other<Array<{ n: string }>>`select last_value::text as n from refused_commits`
  t.equal(calls!.n, '1', 'no second attempt reached its commit')

  const retried = await send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 3 }]), { 'idempotency-key': 'refused-1' })
  t.equal(retried.statusCode, 201, retried.body)
  t.equal(await productStock(r.app, r.mug.id), 7, 'the client\'s retry takes its stock once')
})

t.test('an order retried after a refused commit is still bound by the deadline: 503 when the retry waits past it', needsPostgres, async (t) => {
  const r = await rig(t)
  const before = await orderSnapshot(r.app)
  await refuseFirstCommit(r, 300)
  const late = send(r, 'POST', '/orders', orderBody([{ productId: r.mug.id, quantity: 3 }]))
  // While the first attempt's commit sleeps (holding the product), another transaction asks for
  // the product's lock: it gets it when that attempt rolls back, before the retry asks.
  await sleep(100)
  const lock = await holdLock(r, DEADLINE_MS + 1000)
  expectDeadline(t, await late, 'the retried order')
  await lock.released
  await quiet(r)
  t.same(await orderSnapshot(r.app), before, 'no order, no stock taken')
})
