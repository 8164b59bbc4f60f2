// The never-oversell race: 60 integrators at once on two instances of one PostgreSQL database,
// mixing plain orders, holds, releases, expiries and orders that consume a hold, over a scarce
// product and a scarce combination. Afterwards units sold + units held + units left is exactly
// the stock, and nothing was sold or held beyond it. PGlite is one connection, so the race
// proves nothing there: it needs TEST_DATABASE_URL.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase } from '../../db/client.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { expireLapsedReservations } from '../../services/reservations.ts'
import { buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, orderBody, postOrder, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const skip = usingPostgres ? false : 'needs TEST_DATABASE_URL: the race proves nothing on PGlite, which is one connection'
const STOCK = 20
const COMBINATION_STOCK = 12

t.test('60 concurrent orders, holds, releases, expiries and consumptions on two instances never oversell', { skip }, async (t) => {
  const { database, url } = await createTestDatabase(t, { poolSize: 30 })
  const second = await openDatabase({ url: url!, poolSize: 30 })
  t.teardown(() => second.close())
  // Sweeps every 100 ms on both instances, beside the ones the expiring integrators run.
  const env = { ...UNLIMITED, RESERVATION_SWEEP_MS: '100' }
  const apps: App[] = [await buildTestApp(t, { database, env }), await buildTestApp(t, { database: second, env })]
  await Promise.all(apps.map((app) => app.ready()))
  const keys = [(await makeKey(apps[0]!)).key, (await makeKey(apps[0]!)).key, (await makeKey(apps[0]!)).key]

  const vase = makeProduct({ name: 'Race Vase', price: 5, quantity: STOCK })
  const red = randomUUID()
  const shirt: CatalogProduct = {
    id: randomUUID(),
    name: 'Race Shirt',
    price: 9,
    isAvailable: true,
    variants: [{ id: randomUUID(), name: 'Color', options: [{ id: red, name: 'Red' }] }],
    combinations: [{ id: randomUUID(), optionIds: [red], price: 9, quantity: COMBINATION_STOCK, isAvailable: true }]
  }
  await importProducts(apps[0]!, [vase, shirt])
  const combinationId = shirt.combinations![0]!.id
  const lines = [{ productId: vase.id, quantity: 1 }, { productId: shirt.id, combinationId, quantity: 1 }]

  const tally = { attempts: 0, holdsGranted: 0, holdsRefused: 0, ordersCreated: 0, consumed: 0, released: 0, expired: 0, refusedOrders: 0, unexpected: [] as string[] }
  const expect = (what: string, res: { statusCode: number, body: string }, ok: number[]) => {
    if (!ok.includes(res.statusCode)) tally.unexpected.push(`${what}: ${res.statusCode} ${res.body.slice(0, 200)}`)
  }

  const integrator = async (i: number) => {
    const app = apps[i % 2]!
    const key = keys[i % 3]!
    const items = i % 3 === 0 ? [lines[0]!] : i % 3 === 1 ? [lines[1]!] : lines
    tally.attempts++
    if (i % 5 === 0) {
      const res = await postOrder(app, key, orderBody(items))
      expect('order', res, [201, 400])
      if (res.statusCode === 201) tally.ordersCreated++
      else tally.refusedOrders++
      return
    }
    const held = await hold(app, key, { items: items.map((l) => ({ ...l, quantity: 2 })) })
    expect('hold', held, [201, 400])
    if (held.statusCode !== 201) { tally.holdsRefused++; return }
    tally.holdsGranted++
    const reservation = held.json<Reservation>()
    const other = apps[(i + 1) % 2]!
    if (i % 5 === 1 || i % 5 === 4) {
      // Paid: the order takes the held units, on the other instance, its lines split.
      const res = await postOrder(other, key, orderBody(items.flatMap((l) => [l, l]), { reservationId: reservation.id }))
      expect('consume', res, [201])
      if (res.statusCode === 201) { tally.ordersCreated++; tally.consumed++ }
    } else if (i % 5 === 2) {
      const res = await release(other, key, reservation.id)
      expect('release', res, [204])
      tally.released++
    } else {
      // Abandoned: it lapses, and whichever sweep comes first gives the units back.
      await execute(app.database.db, sql`update reservations set expires_at = now() where id = ${reservation.id}::uuid`)
      tally.expired += await expireLapsedReservations(apps[i % 2]!.stock, 5)
    }
  }
  await Promise.all(Array.from({ length: 60 }, (_, i) => integrator(i)))
  // Let the sweeps finish what lapsed.
  await new Promise((resolve) => setTimeout(resolve, 500))

  const [row] = await execute<{ left_vase: number, left_combination: number, sold_vase: number, sold_combination: number, held_vase: number, held_combination: number, active: number, expired: number }>(apps[0]!.database.db, sql`
    select (select quantity from products where id = ${vase.id}::uuid) as left_vase,
      (select quantity from combinations where id = ${combinationId}::uuid) as left_combination,
      (select coalesce(sum(quantity), 0)::int from order_items where product_id = ${vase.id}::uuid) as sold_vase,
      (select coalesce(sum(quantity), 0)::int from order_items where combination_id = ${combinationId}::uuid) as sold_combination,
      (select coalesce(sum(i.held), 0)::int from reservation_items i join reservations r on r.id = i.reservation_id
        where r.status = 'active' and i.product_id = ${vase.id}::uuid) as held_vase,
      (select coalesce(sum(i.held), 0)::int from reservation_items i join reservations r on r.id = i.reservation_id
        where r.status = 'active' and i.combination_id = ${combinationId}::uuid) as held_combination,
      (select count(*)::int from reservations where status = 'active') as active,
      (select count(*)::int from reservations where status = 'expired') as expired`)
  const figures = {
    ...tally,
    unexpected: tally.unexpected.length,
    expired: row!.expired,
    unitsLeft: { vase: row!.left_vase, combination: row!.left_combination },
    unitsSold: { vase: row!.sold_vase, combination: row!.sold_combination },
    unitsHeld: { vase: row!.held_vase, combination: row!.held_combination },
    oversells: Math.max(0, row!.sold_vase + row!.held_vase - STOCK) + Math.max(0, row!.sold_combination + row!.held_combination - COMBINATION_STOCK)
  }
  t.comment(`race figures: ${JSON.stringify(figures)}`)
  t.same(tally.unexpected.slice(0, 5), [], 'every answer is one the contract gives (no 409, no 500)')
  t.equal(figures.oversells, 0, 'sold + held never exceed the stock')
  t.equal(row!.sold_vase + row!.held_vase + row!.left_vase, STOCK, 'the vase: every unit sold, held or left, exactly once')
  t.equal(row!.sold_combination + row!.held_combination + row!.left_combination, COMBINATION_STOCK, 'the combination too')
  t.equal(row!.active, 0, 'every hold ended: consumed, released or expired')
  t.ok(tally.holdsGranted > 0 && tally.holdsRefused > 0, 'some holds were granted and some refused: the stock ran out')
  t.equal(tally.consumed + tally.released + row!.expired, tally.holdsGranted, 'every granted hold consumed, released or expired')
})
