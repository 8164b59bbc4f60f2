// Plans the database keeps. The stock statements (every order and hold) take their ids as
// arrays, for which PostgreSQL's plan cache chose custom plans and planned them again on every
// call: lock_sellables 0.88 ms a call against 0.26 ms with its generic plan (the same index
// scans), the documents' query 0.25 ms of planning against 0.15 ms of execution; the catalogue's
// reads (one product's document, a page by number) 0.10 and 0.31 ms of planning a call. The
// order path's statements are fixed texts, none built per request.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute, type Tx } from '../../db/client.ts'
import { listProducts, readDocuments } from '../../db/products.ts'
import { pageWindow } from '../../schemas/common.ts'
import { StockKeeper } from '../../services/stock.ts'
import { authHeaders, buildTestApp, createTestDatabase, importProducts, makeKey, makeProduct, orderBody, tableRowsRead, UNLIMITED, usingPostgres } from '../helper.ts'

t.test('lock_sellables runs with its generic plans, whatever the session says', async (t) => {
  const { database } = await createTestDatabase(t)
  const [fn] = await execute<{ config: string | null }>(database.db, sql`select array_to_string(proconfig, ' ') as config from pg_proc where proname = 'lock_sellables'`)
  t.equal(fn?.config, 'plan_cache_mode=force_generic_plan')
  // The setting goes with the call and back: the session's own is untouched.
  await execute(database.db, sql`select * from lock_sellables('{}'::uuid[], '{}'::uuid[], false)`)
  const [mode] = await execute<{ mode: string }>(database.db, sql`select current_setting('plan_cache_mode') as mode`)
  t.equal(mode?.mode, 'auto')
})

t.test('a stock write keeps generic plans for its own transaction only', async (t) => {
  const { database } = await createTestDatabase(t, { poolSize: 1 })
  const modeIn = async (db: typeof database.db) => (await execute<{ mode: string }>(db, sql`select current_setting('plan_cache_mode') as mode`))[0]!.mode
  const inside = await new StockKeeper(database).run((shelf) => modeIn(shelf.tx))
  t.equal(inside, 'force_generic_plan', 'inside the stock write')
  t.equal(await modeIn(database.db), 'auto', 'the same connection afterwards')
})

t.test('a product and a page by number (of the whole list, or of isAvailable) are read with their generic plans, not planned again each time', usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL' }, async (t) => {
  // One connection: the statements it prepared are the session's own (pg_prepared_statements).
  const { database } = await createTestDatabase(t, { poolSize: 1 })
  const app = await buildTestApp(t, { database })
  const products = Array.from({ length: 60 }, (_, i) => makeProduct({ name: `Plan ${String(i).padStart(2, '0')}` }))
  await importProducts(app, products)
  for (let i = 0; i < 12; i++) {
    t.equal((await readDocuments(database.db, [products[i]!.id])).length, 1)
    t.equal((await listProducts(database.db, {}, pageWindow(1 + (i % 3)))).items.length, i % 3 === 2 ? 10 : 25)
    t.equal((await listProducts(database.db, { isAvailable: true }, pageWindow(1 + (i % 3)))).items.length, i % 3 === 2 ? 10 : 25)
  }
  const plans = await execute<{ statement: string, generic: number, custom: number }>(database.db, sql`select statement, generic_plans::int as generic, custom_plans::int as custom
    from pg_prepared_statements where statement like '%from product_documents d where d.product_id = $1::uuid%'
      or statement like 'select l.product_id as id,%' or statement like 'with counted as (%'`)
  t.equal(plans.length, 3, 'the three statements prepared: a product, a page of positions, a page of isAvailable')
  for (const plan of plans) {
    // The plan cache tries custom plans 5 times before it judges the generic one.
    t.ok(plan.custom <= 5 && plan.generic >= 7, `${plan.statement.slice(0, 60)}…: ${plan.generic} generic, ${plan.custom} custom`)
  }
})

t.test('a page by number reads the products\' rows of none but its last shown product (its cursor\'s sort key)', async (t) => {
  const { database } = await createTestDatabase(t)
  const app = await buildTestApp(t, { database })
  await importProducts(app, Array.from({ length: 60 }, (_, i) => makeProduct({ name: `Read ${String(i).padStart(2, '0')}` })))
  // No sequential scans: at this size the planner would read all 60 rows for one.
  const productRows = (tx: Tx) => tableRowsRead(tx, 'products')
  await database.db.transaction(async (tx) => {
    await execute(tx, sql`set local enable_seqscan = off`)
    const before = await productRows(tx)
    const page = await listProducts(tx, {}, pageWindow(2))
    t.equal(page.items.length, 25)
    t.same(page.next, ['read 49', page.items[24]!.id], 'the next page starts after its last product')
    // Joined for every row, the products' rows of the page were read: 26.
    t.equal(await productRows(tx) - before, 1, 'one product row read: the last shown')
    const last = await listProducts(tx, {}, pageWindow(3))
    t.equal(last.next, null)
    t.equal(await productRows(tx) - before, 1, 'none for the last page, which has no next')
  })
})

t.test('an order with an Idempotency-Key stores and replays its response by fixed statements, prepared once and planned generically', usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL' }, async (t) => {
  const { database } = await createTestDatabase(t, { poolSize: 1 })
  const app = await buildTestApp(t, { database, env: UNLIMITED })
  const { key } = await makeKey(app)
  const mug = makeProduct({ name: 'Plan Mug', quantity: 100 })
  await importProducts(app, [mug])
  const order = (idempotencyKey: string) => app.inject({ method: 'POST', url: '/external/v1/orders', headers: { ...authHeaders(key), 'idempotency-key': idempotencyKey }, payload: orderBody([{ productId: mug.id }]) })
  for (let i = 0; i < 12; i++) {
    const res = await order(`plan-${i}`)
    t.equal(res.statusCode, 201, res.body)
  }
  for (let i = 0; i < 12; i++) {
    const replayed = await order(`plan-${i}`)
    t.equal(replayed.headers['idempotent-replayed'], 'true', 'a stored response replays')
  }
  const prepared = async (text: string) => await execute<{ generic: number, custom: number }>(database.db, sql`select generic_plans::int as generic, custom_plans::int as custom
    from pg_prepared_statements where statement like ${text}`)
  for (const [what, text] of [['the store', 'update idempotency_keys%'], ['the replay\'s read', 'select request_hash%']] as const) {
    const plans = await prepared(text)
    t.equal(plans.length, 1, `${what}: one statement text for every order`)
    const [plan] = plans
    t.ok(plan && plan.custom <= 5 && plan.generic >= 7, `${what}: ${plan?.generic} generic, ${plan?.custom} custom`)
  }
})
