// Reservations expire from the database, not from a timer a restart forgets: within 5 s of
// expiresAt the units are back and the status is expired, on one instance, on a fleet (each
// hold expired once) and after a restart in between. The latency is measured and printed.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute } from '../../db/client.ts'
import { openDatabase } from '../../db/client.ts'
import { expireLapsedReservations } from '../../services/reservations.ts'
import { buildTestApp, createTestDatabase, getJson, importProducts, makeKey, makeProduct, orderBody, postOrder, productStock, sleep, until, UNLIMITED, usingPostgres } from '../helper.ts'
import { events, expectCode, hold, product, release, type Reservation } from '../reservations.ts'

const env = { ...UNLIMITED, RESERVATION_SWEEP_MS: '1000' }

async function secondConnection (t: Parameters<typeof buildTestApp>[0], url: string) {
  const database = await openDatabase({ url, poolSize: 10 })
  t.teardown(() => database.close())
  return database
}

/** Moves a reservation's expiresAt to `ms` from the database's now; returns that instant. */
async function expireIn (app: App, ids: string[], ms: number): Promise<number> {
  const rows = await execute<{ at: string }>(app.database.db, sql`update reservations set expires_at = now() + make_interval(secs => ${ms / 1000})
    where id in (${sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)}) returning to_json(expires_at) as at`)
  return Date.parse(rows[0]!.at)
}

async function statusOf (app: App, key: string, id: string): Promise<string> {
  return (await getJson(app, key, `/external/v1/reservations/${id}`)).json<Reservation>().status
}

t.test('past its expiresAt a reservation cannot be used; the sweep gives its units back within 5 s', async (t) => {
  const app = await buildTestApp(t, { env })
  const { key } = await makeKey(app)
  const { key: other } = await makeKey(app)
  const bowl = makeProduct({ name: 'Expiring Bowl', quantity: 4 })
  await importProducts(app, [bowl])
  const held = (await hold(app, key, { items: [{ productId: bowl.id, quantity: 3 }] })).json<Reservation>()
  t.equal(await productStock(app, bowl.id), 1)
  const before = await events(app, bowl.id)

  const expiresAt = await expireIn(app, [held.id], 1500)
  const seen = await until('the expiry', async () => (await statusOf(app, key, held.id)) === 'expired' ? Date.now() : undefined, 10_000)
  const latency = seen - expiresAt
  t.comment(`expiry latency (one instance, sweep every 1 s): ${latency} ms after expiresAt`)
  t.ok(latency >= 0 && latency < 5000, `expired ${latency} ms after expiresAt`)
  t.match(await product(app, other, bowl.id), { quantity: 4, isAvailable: true }, 'the units are back')
  t.equal(await events(app, bowl.id), before + 1, 'product.updated written with the expiry')
  expectCode(t, await postOrder(app, key, orderBody([{ productId: bowl.id, quantity: 3 }], { reservationId: held.id })), 409, 'reservation_not_active', { message: /expired/ })
  expectCode(t, await release(app, key, held.id), 409, 'reservation_not_active')
  t.equal(await expireLapsedReservations(app.stock, 10), 0, 'nothing left to sweep')
})

t.test('a lapsed reservation not yet swept already answers reservation_not_active', async (t) => {
  // A sweep slower than the test: only the requests see the lapse.
  const app = await buildTestApp(t, { env: { ...env, RESERVATION_SWEEP_MS: '4000' } })
  const { key } = await makeKey(app)
  const cup = makeProduct({ name: 'Lapsed Cup', quantity: 2 })
  await importProducts(app, [cup])
  const held = (await hold(app, key, { items: [{ productId: cup.id }] })).json<Reservation>()
  await execute(app.database.db, sql`update reservations set expires_at = now() - interval '1 millisecond' where id = ${held.id}::uuid`)
  expectCode(t, await postOrder(app, key, orderBody([{ productId: cup.id }], { reservationId: held.id })), 409, 'reservation_not_active', { message: /expired/ })
  expectCode(t, await release(app, key, held.id), 409, 'reservation_not_active', { message: /expired/ })
  const swept = await expireLapsedReservations(app.stock, 1)
  t.ok(swept <= 1)
  t.equal(await statusOf(app, key, held.id), 'expired')
  t.equal(await productStock(app, cup.id), 2)
})

t.test('after a restart in between, the next instance expires what lapsed while none ran', async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 5 })
  const first = await buildTestApp(t, { database, env })
  const { key } = await makeKey(first)
  const jar = makeProduct({ name: 'Restart Jar', quantity: 5 })
  await importProducts(first, [jar])
  const held = (await hold(first, key, { items: [{ productId: jar.id, quantity: 5 }] })).json<Reservation>()
  await first.close()

  const expiresAt = await expireIn(first, [held.id], 500)
  await sleep(1000)
  t.equal(await productStock(first, jar.id), 0, 'no instance ran: still held')
  const second = await buildTestApp(t, { database: url === undefined ? database : await secondConnection(t, url), env })
  await second.ready()
  const started = Date.now()
  const seen = await until('the expiry after the restart', async () => (await statusOf(second, key, held.id)) === 'expired' ? Date.now() : undefined, 10_000)
  t.comment(`expiry after a restart: ${seen - started} ms after the new instance started (${seen - expiresAt} ms after expiresAt, downtime included)`)
  t.ok(seen - started < 5000, 'expired within 5 s of the new instance starting')
  t.equal(await productStock(second, jar.id), 5, 'the units are back')
})

t.test('a fleet of instances expires each hold once and on time', { skip: usingPostgres ? false : 'several instances need PostgreSQL' }, async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 10 })
  const fleet = [await buildTestApp(t, { database, env })]
  for (let i = 0; i < 2; i++) fleet.push(await buildTestApp(t, { database: await secondConnection(t, url!), env }))
  await Promise.all(fleet.map((app) => app.ready()))
  const app = fleet[0]!
  const { key } = await makeKey(app)
  const kettle = makeProduct({ name: 'Fleet Kettle', quantity: 90 })
  await importProducts(app, [kettle])
  const ids: string[] = []
  for (let i = 0; i < 30; i++) ids.push((await hold(fleet[i % 3]!, key, { items: [{ productId: kettle.id, quantity: 3 }] })).json<Reservation>().id)
  t.equal(await productStock(app, kettle.id), 0, 'all 90 held')

  const expiresAt = await expireIn(app, ids, 1000)
  const seen = await until('every expiry', async () => {
    const [row] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from reservations where status = 'expired'`)
    return row!.n === 30 ? Date.now() : undefined
  }, 10_000)
  t.comment(`expiry latency (3 instances, 30 holds, sweep every 1 s): all expired ${seen - expiresAt} ms after expiresAt`)
  t.ok(seen - expiresAt < 5000)
  t.equal(await productStock(app, kettle.id), 90, 'every unit back exactly once: none lost, none doubled')
})
