// A model-based concurrency test of stock on real PostgreSQL. Random mixes of orders (several
// lines, combinations, the same product twice, live and test keys), holds, orders that consume
// them, releases, expiries, cancellations and imports (plain, replacing, and a file streamed
// slowly) run from two instances at once. Once it settles:
//   - every product's stored document, and what both instances answer for it, equals a fresh
//     render of its rows; a product's quantity is the sum of its combinations'; nothing is negative;
//   - units are conserved: for every stock row, left + held = what the last import set, less
//     what orders took after it, plus what cancellations gave back after it. The run has two
//     halves: the first mixes imports in, and there, which operations came after an import is
//     known for those that began after it ended or ended before it began, and for those that
//     overlapped it some choice of before/after must explain the figure; the second has no
//     import, so from the quiet moment between them on the figure must be exact;
//   - no answer was 500 or more.
// The operations come from a seeded generator: the seed is printed, and STOCK_MODEL_SEED=<n>
// (with STOCK_MODEL_OPERATIONS=<n>) replays the same operations. CI runs a fixed seed and two
// random ones.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import type { App } from '../../app.ts'
import { execute, openDatabase } from '../../db/client.ts'
import { renderDocuments } from '../../db/products.ts'
import type { JsonStreamEntry } from '../../lib/json-stream.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { publishChanges } from '../../services/changes.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { authHeaders, buildTestApp, createTestDatabase, makeKey, orderBody, pollState, postOrder, sleep, UNLIMITED, usingPostgres } from '../helper.ts'
import { hold, release, type Reservation } from '../reservations.ts'

const skip = usingPostgres ? false : 'needs TEST_DATABASE_URL: PGlite runs one transaction at a time, so nothing here would be concurrent'

/** mulberry32: a small seeded generator, so a seed replays the same operations. */
function generator (seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6D2B79F5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p
  }
}
type Random = ReturnType<typeof generator>

// The catalogue: two simple products, two with combinations, one untracked, and one that
// replacing imports remove and the others bring back (left out of the accounting).
interface Shape { id: string, name: string, variant: string, options: string[], combinations: string[], tracked: boolean, ephemeral: boolean }

function shapes (): Shape[] {
  const simple = (name: string, tracked = true, ephemeral = false): Shape => ({ id: randomUUID(), name, variant: randomUUID(), options: [], combinations: [], tracked, ephemeral })
  const sized = (name: string, n: number): Shape => ({
    ...simple(name),
    options: Array.from({ length: n }, () => randomUUID()),
    combinations: Array.from({ length: n }, () => randomUUID())
  })
  return [simple('Model Mug'), simple('Model Vase'), sized('Model Shirt', 4), sized('Model Shoe', 3), simple('Model Sticker', false), simple('Model Lamp', true, true)]
}

/** Stock rows (a simple product, or a combination) and their quantity in one import's file. */
type Quantities = Map<string, number>

function catalogueFile (catalogue: Shape[], random: Random, importNumber: number, replace: boolean): { products: CatalogProduct[], quantities: Quantities } {
  const quantities: Quantities = new Map()
  const products = catalogue.filter((s) => !(replace && s.ephemeral)).map((s): CatalogProduct => {
    // Every import renames every product, so each one rewrites them all: the name tells which import was last.
    const name = `${s.name} #${importNumber}`
    if (s.combinations.length === 0) {
      const quantity = s.tracked ? random.int(3, 12) : null
      if (quantity !== null) quantities.set(s.id, quantity)
      return { id: s.id, name, price: 5, quantity, isAvailable: true }
    }
    return {
      id: s.id,
      name,
      price: 7,
      isAvailable: true,
      variants: [{ id: s.variant, name: 'Size', options: s.options.map((id, i) => ({ id, name: `Size ${i}` })) }],
      combinations: s.combinations.map((c, i) => {
        const quantity = random.int(2, 8)
        quantities.set(c, quantity)
        return { id: c, optionIds: [s.options[i]!], price: 7, quantity, isAvailable: true }
      })
    }
  })
  return { products, quantities }
}

interface Line { productId: string, combinationId?: string, quantity: number }

/** What one operation did, for the accounting: when it ran and its effect on each stock row. */
interface Effect { start: number, end: number, units: Map<string, number> }

const stockRow = (line: Line) => line.combinationId ?? line.productId

function lines (catalogue: Shape[], random: Random): Line[] {
  const count = random.int(1, 3)
  const made: Line[] = []
  for (let i = 0; i < count; i++) {
    const shape = random.pick(catalogue)
    made.push({ productId: shape.id, ...(shape.combinations.length > 0 ? { combinationId: random.pick(shape.combinations) } : {}), quantity: random.int(1, 3) })
  }
  // Sometimes the same product (or combination) twice.
  if (random.chance(0.15)) made.push({ ...made[0]! })
  return made
}

/** Units per tracked stock row that lines take. */
function unitsOf (request: Line[], tracked: Set<string>): Map<string, number> {
  const units = new Map<string, number>()
  for (const line of request) {
    const row = stockRow(line)
    if (tracked.has(row)) units.set(row, (units.get(row) ?? 0) + line.quantity)
  }
  return units
}

/** Every sum `subset of values` can make. */
function subsetSums (values: number[]): Set<number> {
  let sums = new Set([0])
  for (const v of values) sums = new Set([...sums, ...[...sums].map((s) => s + v)])
  return sums
}

/** left + held of every tracked stock row (of the products kept throughout). */
async function unitsByRow (db: App['database']['db']): Promise<Map<string, number>> {
  const rows = await execute<{ id: string, units: number }>(db, sql`
    with stock as (
      select id, quantity from products where quantity is not null
      union all select id, quantity from combinations where quantity is not null
    ), held as (
      select coalesce(i.combination_id, i.product_id) as id, sum(i.held)::int as held
      from reservation_items i join reservations r on r.id = i.reservation_id where r.status = 'active' group by 1
    )
    select s.id::text as id, (s.quantity + coalesce(h.held, 0))::int as units from stock s left join held h on h.id = s.id`)
  return new Map(rows.map((r) => [r.id, r.units]))
}

interface ModelRun { seed: number, operations: number }

async function runModel (t: Test, { seed, operations }: ModelRun) {
  t.comment(`seed ${seed}, ${operations} operations (replay: STOCK_MODEL_SEED=${seed} STOCK_MODEL_OPERATIONS=${operations})`)
  const random = generator(seed)
  const { database, url } = await createTestDatabase(t, { poolSize: 20 })
  const second = await openDatabase({ url: url!, poolSize: 20 })
  t.teardown(() => second.close())
  const env = { ...UNLIMITED, RESERVATION_SWEEP_MS: '100', EVENT_PUBLISH_MS: '50' }
  const apps: App[] = [await buildTestApp(t, { database, env }), await buildTestApp(t, { database: second, env })]
  await Promise.all(apps.map((app) => app.ready()))
  const keys = { live: [(await makeKey(apps[0]!)).key, (await makeKey(apps[0]!)).key], test: (await makeKey(apps[0]!, undefined, { mode: 'test' })).key }
  const catalogue = shapes()
  const tracked = new Set(catalogue.filter((s) => s.tracked && !s.ephemeral).flatMap((s) => s.combinations.length > 0 ? s.combinations : [s.id]))

  const imports = new Map<number, { start: number, end: number, quantities: Quantities }>()
  let importNumber = 0
  async function runImport (app: App, kind: 'plain' | 'replace' | 'slow') {
    const number = importNumber++
    const file = catalogueFile(catalogue, random, number, kind === 'replace')
    const start = performance.now()
    const source = kind === 'slow'
      ? (async function * (): AsyncGenerator<JsonStreamEntry> {
          for (const [index, value] of file.products.entries()) {
            yield { key: 'products', index, value }
            await sleep(60)
          }
        })()
      : { products: file.products }
    await importCatalog(app.database, source, { replace: kind === 'replace' })
    imports.set(number, { start, end: performance.now(), quantities: file.quantities })
  }
  await runImport(apps[0]!, 'plain')

  const orders: Array<{ id: string, live: boolean, units: Map<string, number> }> = []
  const holds: Array<{ id: string, key: string, lines: Line[], live: boolean }> = []
  let taken: Effect[] = []
  let givenBack: Effect[] = []
  const answers = new Map<number, number>()
  const failures: string[] = []
  const note = (what: string, status: number, body: string) => {
    answers.set(status, (answers.get(status) ?? 0) + 1)
    if (status >= 500) failures.push(`${what}: ${status} ${body.slice(0, 200)}`)
  }

  // Each operation chosen now from the seed; the rest of its choices too, so a seed replays them.
  // The second half (from `quiet` on) has no import.
  const plan = Array.from({ length: operations }, () => ({ roll: random.next(), app: random.int(0, 1), lines: lines(catalogue, random), pick: random.next(), keyIndex: random.int(0, 1), split: random.chance(0.5) }))
  const quiet = Math.floor(operations / 2)
  const kinds = plan.map((p, i) => {
    const roll = i < quiet ? p.roll : p.roll * 0.91
    return roll < 0.3 ? 'order' : roll < 0.5 ? 'hold' : roll < 0.62 ? 'consume' : roll < 0.7 ? 'release' : roll < 0.76 ? 'expire' : roll < 0.86 ? 'cancel' : roll < 0.91 ? 'test order' : roll < 0.94 ? 'import' : roll < 0.97 ? 'import replace' : 'import slow'
  })

  async function perform (i: number) {
    const op = plan[i]!
    const app = apps[op.app]!
    const kind = kinds[i]!
    const key = keys.live[op.keyIndex]!
    const start = performance.now()
    switch (kind) {
      case 'order':
      case 'test order': {
        const live = kind === 'order'
        const res = await postOrder(app, live ? key : keys.test, orderBody(op.lines))
        note(kind, res.statusCode, res.body)
        if (res.statusCode === 201) {
          const units = live ? unitsOf(op.lines, tracked) : new Map<string, number>()
          orders.push({ id: res.json<{ id: string }>().id, live, units })
          taken.push({ start, end: performance.now(), units })
        }
        return
      }
      case 'hold': {
        const res = await hold(app, key, { items: op.lines })
        note(kind, res.statusCode, res.body)
        if (res.statusCode === 201) holds.push({ id: res.json<Reservation>().id, key, lines: op.lines, live: true })
        return
      }
      case 'consume': {
        const chosen = holds.splice(Math.floor(op.pick * holds.length), 1)[0]
        if (chosen === undefined) return
        // Lines split in two, or in another order: the order must add up to the hold.
        const sent = op.split ? chosen.lines.flatMap((l) => l.quantity > 1 ? [{ ...l, quantity: 1 }, { ...l, quantity: l.quantity - 1 }] : [l]) : [...chosen.lines].reverse()
        const res = await postOrder(app, chosen.key, orderBody(sent, { reservationId: chosen.id }))
        note(kind, res.statusCode, res.body)
        if (res.statusCode === 201) {
          const units = unitsOf(chosen.lines, tracked)
          orders.push({ id: res.json<{ id: string }>().id, live: true, units })
          taken.push({ start, end: performance.now(), units })
        }
        return
      }
      case 'release': {
        const chosen = holds.splice(Math.floor(op.pick * holds.length), 1)[0]
        if (chosen === undefined) return
        const res = await release(app, chosen.key, chosen.id)
        note(kind, res.statusCode, res.body)
        return
      }
      case 'expire': {
        const chosen = holds.splice(Math.floor(op.pick * holds.length), 1)[0]
        if (chosen === undefined) return
        // Lapsed now: the sweeps of both instances race to give its units back.
        await execute(app.database.db, sql`update reservations set expires_at = now() where id = ${chosen.id}::uuid`)
        return
      }
      case 'cancel': {
        const chosen = orders[Math.floor(op.pick * orders.length)]
        if (chosen === undefined) return
        const change = await setOrderStatus(app.database, chosen.id, 'cancelled')
        if (change.ok) givenBack.push({ start, end: performance.now(), units: chosen.live ? chosen.units : new Map() })
        return
      }
      default:
        await runImport(app, kind === 'import' ? 'plain' : kind === 'import replace' ? 'replace' : 'slow')
    }
  }

  // A dozen integrators and operators at once, each taking the next operation.
  async function runOperations (from: number, to: number) {
    let next = from
    await Promise.all(Array.from({ length: 12 }, async () => {
      while (next < to) {
        const i = next++
        try {
          await perform(i)
        } catch (err) {
          failures.push(`${kinds[i]} threw: ${(err as Error).message.slice(0, 200)}`)
        }
      }
    }))
  }
  const db = apps[0]!.database.db
  const began = performance.now()
  await runOperations(0, quiet)
  const atQuiet = await unitsByRow(db)
  const names = new Map((await execute<{ id: string, name: string }>(db, sql`select id::text as id, name from products`)).map((r) => [r.id, r.name]))
  const sinceImport: string[] = []
  for (const shape of catalogue.filter((s) => s.tracked && !s.ephemeral)) {
    const last = imports.get(Number(/#(\d+)$/.exec(names.get(shape.id)!)![1]))!
    for (const row of shape.combinations.length > 0 ? shape.combinations : [shape.id]) {
      const x = atQuiet.get(row)!
      const required = last.quantities.get(row)! - x
      let definite = 0
      const maybe: number[] = []
      const count = (effect: Effect, sign: number) => {
        const units = (effect.units.get(row) ?? 0) * sign
        if (units === 0 || effect.end < last.start) return
        if (effect.start > last.end) definite += units
        else maybe.push(units)
      }
      for (const e of taken) count(e, 1)
      for (const e of givenBack) count(e, -1)
      if (!subsetSums(maybe).has(required - definite)) {
        sinceImport.push(`${row}: left + held = ${x}, imported ${last.quantities.get(row)}; taken after the import ${definite} for certain, ${JSON.stringify(maybe)} perhaps, which cannot make ${required}`)
      }
    }
  }
  t.same(sinceImport, [], `seed ${seed}: with imports, every unit sold, held or left, as the last import set them`)

  taken = []
  givenBack = []
  await runOperations(quiet, plan.length)
  const ran = performance.now() - began
  // Settle: the sweeps expire what lapsed, the feed publishes, both instances poll.
  await sleep(600)
  for (const app of apps) {
    await publishChanges(app.database)
    await pollState(app)
  }
  const counts = Object.fromEntries(['order', 'hold', 'consume', 'release', 'expire', 'cancel', 'test order', 'import', 'import replace', 'import slow'].map((k) => [k, kinds.filter((x) => x === k).length]))
  t.comment(`seed ${seed}: ${JSON.stringify(counts)} in ${(ran / 1000).toFixed(1)} s; answers ${JSON.stringify(Object.fromEntries(answers))}; ${imports.size} imports`)
  t.same(failures, [], `seed ${seed}: no answer of 500 or more, nothing thrown`)

  // Every product: its stored document and both instances' answers equal a fresh render of its rows.
  const ids = (await execute<{ id: string }>(db, sql`select id::text as id from products order by id`)).map((r) => r.id)
  const fresh = new Map((await renderDocuments(db, ids, new Date())).map((d) => [d.id, JSON.parse(d.body) as Record<string, unknown>]))
  const stored = new Map((await execute<{ id: string, body: string }>(db, sql`select product_id::text as id, body from product_documents`)).map((r) => [r.id, JSON.parse(r.body) as unknown]))
  let diverging: string | null = null
  for (const id of ids) {
    const answered = await Promise.all(apps.map(async (app) => (await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(keys.live[0]!) })).json()))
    for (const [what, seen] of [['stored document', stored.get(id)], ['instance 1', answered[0]], ['instance 2', answered[1]]] as const) {
      if (diverging === null && JSON.stringify(seen) !== JSON.stringify(fresh.get(id))) {
        diverging = `seed ${seed}: product ${id}: the ${what} ${JSON.stringify(seen)} differs from a fresh render ${JSON.stringify(fresh.get(id))}`
      }
    }
  }
  t.equal(diverging, null, `seed ${seed}: every product read as a fresh render of its rows (${ids.length} products)`)
  const rows = await execute<{ id: string, quantity: number | null, combinations: number[] | null, negative: boolean }>(db, sql`
    select p.id::text as id, p.quantity, (select json_agg(c.quantity) from combinations c where c.product_id = p.id) as combinations,
      p.quantity < 0 or exists (select 1 from combinations c where c.product_id = p.id and c.quantity < 0) as negative from products p`)
  t.same(rows.filter((r) => r.negative).map((r) => r.id), [], `seed ${seed}: no stock below zero`)
  const sums = rows.filter((r) => r.combinations !== null).map((r) => {
    const shown = fresh.get(r.id)!.quantity
    const all = r.combinations!
    return { id: r.id, shown, sum: all.some((q) => q === null) ? null : all.reduce((s, q) => s + q, 0) }
  })
  t.same(sums.filter((s) => s.shown !== s.sum), [], `seed ${seed}: a product's quantity is the sum of its combinations'`)

  // Conservation, exact, since the quiet moment.
  const atEnd = await unitsByRow(db)
  const unexplained: string[] = []
  for (const [row, x] of atQuiet) {
    if (!tracked.has(row)) continue
    const sold = taken.reduce((sum, e) => sum + (e.units.get(row) ?? 0), 0)
    const back = givenBack.reduce((sum, e) => sum + (e.units.get(row) ?? 0), 0)
    if (atEnd.get(row) !== x - sold + back) unexplained.push(`${row}: left + held ${x} at the quiet moment, ${sold} sold and ${back} given back since, but ${atEnd.get(row)} now`)
  }
  t.same(unexplained, [], `seed ${seed}: without imports, every unit sold, held or left, exactly (${tracked.size} stock rows)`)
  const [constraint] = await execute<{ bad: number }>(db, sql`select count(*)::int as bad from reservation_items where held < 0 or held > quantity`)
  t.equal(constraint!.bad, 0, `seed ${seed}: no hold line holds less than nothing or more than its quantity`)
}

const fixed = Number(process.env.STOCK_MODEL_SEED ?? NaN)
const operations = Number(process.env.STOCK_MODEL_OPERATIONS ?? 0)
const runs: ModelRun[] = Number.isInteger(fixed)
  ? [{ seed: fixed, operations: operations || 300 }]
  : [{ seed: 20261127, operations: 300 }, ...[1, 2].map(() => ({ seed: Math.floor(Math.random() * 2 ** 31), operations: 150 }))]

for (const run of runs) {
  t.test(`stock stays exact under a random mix (seed ${run.seed}, ${run.operations} operations, two instances)`, { skip }, (t) => runModel(t, run))
}
