// The orders export's lines as PostgreSQL builds them (selectOrderDocuments in db/orders.ts)
// against GET order's answer for the same order, over generated orders: any text PostgreSQL
// can hold (control characters, quotes, backslashes, U+2028, astral characters), amounts from
// 0 to the column's largest, instants to the microsecond, addresses with any subset of their
// fields and any coordinate a double can be (0, -0, subnormal, 1e-7, 89.99999999999999). Each
// line is either GET order's body byte for byte, or left to the app (its id) when the
// statement cannot promise it. FUZZ_SEED fixes the generator; FUZZ_RUNS the orders generated.
import fc from 'fast-check'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { selectOrderDocuments } from '../../db/orders.ts'
import { ORDER_STATUSES } from '../../schemas/orders.ts'
import { authHeaders, buildTestApp, makeKey } from '../helper.ts'

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20261129
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 120

const app = await buildTestApp(t)
const { key, id: keyId } = await makeKey(app)

// Text as PostgreSQL holds it: any code point but NUL.
const text = fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replaceAll('\u0000', ''))
const cents = fc.integer({ min: 0, max: 99_999_999_999 })
const amount = (c: number) => `${Math.floor(c / 100)}.${String(c % 100).padStart(2, '0')}`
const coordinate = fc.oneof(
  { arbitrary: fc.constantFrom(0, -0, 1e-7, -1e-6, 0.000001, 5e-324, 89.99999999999999, -90), weight: 1 },
  { arbitrary: fc.double({ min: -90, max: 90, noNaN: true }), weight: 1 },
  // What a map gives: six decimals.
  { arbitrary: fc.integer({ min: -90_000_000, max: 90_000_000 }).map((n) => n / 1e6), weight: 3 }
)
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null })
const address = fc.record({
  lineOne: maybe(text),
  lineTwo: maybe(text),
  city: maybe(text),
  state: maybe(text),
  country: maybe(text),
  zipCode: maybe(text),
  phone: fc.constant('+41445550123'),
  latitude: maybe(coordinate),
  longitude: maybe(coordinate)
}, { requiredKeys: ['phone'] })
const order = fc.record({
  status: fc.constantFrom(...ORDER_STATUSES),
  total: cents,
  deliveryFee: cents,
  finalTotal: cents,
  productsCount: fc.integer({ min: 1, max: 100_000 }),
  customerName: text,
  customerPhone: maybe(fc.constant('+14155550123')),
  note: maybe(text),
  address: maybe(address),
  // Microseconds after 2020: the app stores milliseconds, a row may hold more.
  createdAtMicros: fc.integer({ min: 0, max: 400_000_000_000_000 }),
  items: fc.array(fc.record({
    combination: fc.boolean(),
    name: text,
    quantity: fc.integer({ min: 1, max: 1000 }),
    singlePrice: cents,
    totalPrice: cents
  }), { minLength: 0, maxLength: 3 })
})

let placed = 0
t.test('each generated order: the statement\'s line is GET order\'s body, or the app renders it', async (t) => {
  let built = 0
  let leftToTheApp = 0
  await fc.assert(fc.asyncProperty(order, async (o) => {
    const id = crypto.randomUUID()
    placed++
    await execute(app.database.db, sql`insert into orders (id, order_number, api_key_id, mode, status, total, delivery_fee, final_total, products_count,
        customer_name, customer_phone, note, address, created_at, updated_at)
      values (${id}, ${900_000 + placed}, ${keyId}, 'live', ${o.status}, ${amount(o.total)}, ${amount(o.deliveryFee)}, ${amount(o.finalTotal)}, ${o.productsCount},
        ${o.customerName}, ${o.customerPhone}, ${o.note}, ${o.address === null ? null : JSON.stringify(o.address)}::jsonb,
        timestamptz '2020-01-01 00:00:00+00' + ${o.createdAtMicros} * interval '1 microsecond', now())`)
    for (const [line, item] of o.items.entries()) {
      await execute(app.database.db, sql`insert into order_items (order_id, line, product_id, combination_id, name, quantity, single_price, total_price, taken)
        values (${id}, ${line}, ${crypto.randomUUID()}, ${item.combination ? crypto.randomUUID() : null}, ${item.name}, ${item.quantity},
          ${amount(item.singlePrice)}, ${amount(item.totalPrice)}, 0)`)
    }
    const [row] = await execute<{ body: string | null, render_id: string | null }>(app.database.db,
      sql`select body, render_id from (${selectOrderDocuments(keyId, {})}) d where coalesce(d.render_id, (d.body::json->>'id')::uuid) = ${id}`)
    const answer = await app.inject({ url: `/external/v1/orders/${id}`, headers: authHeaders(key) })
    if (answer.statusCode !== 200) throw new Error(`GET order answered ${answer.statusCode}: ${answer.body}`)
    if (row!.render_id !== null) {
      leftToTheApp++
      return
    }
    built++
    if (row!.body !== answer.body) throw new Error(`the statement built\n${row!.body}\nGET order answers\n${answer.body}`)
  }), { seed: SEED, numRuns: RUNS })
  t.ok(built > RUNS / 3, `built by the statement (${built} of ${RUNS}), byte for byte GET order's body`)
  t.ok(leftToTheApp > 0, `some left to the app (${leftToTheApp}): coordinates JavaScript prints with an exponent`)
})
