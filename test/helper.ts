// Builds the real app on a fresh database of its own for each test file: a new PostgreSQL
// database when TEST_DATABASE_URL is set, an in-memory PGlite otherwise.
import { randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import type { Test } from 'tap'
import { buildApp, type App, type AppOptions } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createApiKey } from '../db/api-keys.ts'
import { importCatalog } from '../services/catalog-import.ts'
import { execute, migrateDatabase, openDatabase, type Database, type Db, type Tx } from '../db/client.ts'
import { SCOPES, type KeyMode, type Scope } from '../lib/api-key-secret.ts'
import { checkCatalog } from '../lib/catalog-file.ts'
import { refreshState } from '../services/store.ts'
import type { CatalogFile, CatalogProduct } from '../schemas/catalog-file.ts'
import { enforceContract } from './contract.ts'

export interface TestContext {
  teardown: (fn: () => unknown) => void
}

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL)

/**
 * An empty PostgreSQL database on the server of `adminUrl`, dropped at teardown; returns its
 * URL. The name starts with `prefix` and a timestamp, so CI can sweep what a killed run left.
 * Teardowns run last-registered first: clients a caller opens on it after this call, and
 * closes in a teardown, are closed before the drop.
 */
export async function createEmptyDatabase (t: TestContext, prefix: string, adminUrl: string): Promise<string> {
  const name = `${prefix}_${Date.now()}_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  })
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.href
}

/** A migrated database used by this test file only, dropped at teardown. */
export async function createTestDatabase (t: TestContext, options: { poolSize?: number } = {}): Promise<{ database: Database, url?: string }> {
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl) {
    const database = await openDatabase({})
    await migrateDatabase(database)
    t.teardown(() => database.close())
    return { database }
  }
  const url = await createEmptyDatabase(t, 'sf_test', adminUrl)
  const database = await openDatabase({ url, poolSize: options.poolSize })
  t.teardown(() => database.close())
  await migrateDatabase(database, url)
  return { database, url }
}

export interface TestAppOptions extends Partial<Omit<AppOptions, 'config' | 'database'>> {
  database?: Database
  /** Configuration as environment variables, over the test defaults. */
  env?: Record<string, string>
  /** false for a test that deliberately answers outside openapi.yaml; otherwise every inject is checked against it. */
  contract?: boolean
}

/** The real app on a fresh database (or the one given), closed at teardown. */
export async function buildTestApp (t: TestContext, options: TestAppOptions = {}): Promise<App> {
  const database = options.database ?? (await createTestDatabase(t)).database
  const { contract = true, env, database: _given, ...appOptions } = options
  const app = await buildApp({
    config: loadConfig({ LOG_LEVEL: 'silent', ...env }),
    logger: false,
    ...appOptions,
    database
  })
  if (contract) enforceContract(app)
  t.teardown(() => app.close())
  return app
}

/** Creates an API key and returns its secret. */
export async function makeKey (app: App, scopes: Scope[] = [...SCOPES], extra: { expiresAt?: Date, rateLimit?: number, name?: string, mode?: KeyMode } = {}) {
  return createApiKey(app.database.db, { name: extra.name ?? 'test', scopes, expiresAt: extra.expiresAt ?? null, rateLimit: extra.rateLimit ?? null, mode: extra.mode ?? 'live' })
}

let counter = 0
/** A valid catalogue product; ids are random unless given. */
export function makeProduct (overrides: Partial<CatalogProduct> = {}): CatalogProduct {
  counter++
  return {
    id: crypto.randomUUID(),
    name: `Product ${counter}`,
    sku: `SKU-${counter}-${randomBytes(3).toString('hex')}`,
    quantity: 10,
    price: 10,
    isAvailable: true,
    ...overrides
  }
}

/** Runs the state poll at once: the store's settings and the catalogue version, as the database has them. */
export function pollState (app: App): Promise<void> {
  return refreshState(app.database, app.store, app.catalogCache)
}

/** Imports through the same path as `storefront catalog import`, and drops cached reads. */
export async function importProducts (app: App, catalog: CatalogFile | CatalogProduct[]) {
  const file = Array.isArray(catalog) ? { products: catalog } : catalog
  const summary = await importCatalog(app.database, checkCatalog(structuredClone(file)))
  await pollState(app)
  return summary
}

export function authHeaders (key: string): Record<string, string> {
  return { 'x-api-key': key }
}

/**
 * The rows of `table` this transaction has read so far, by any scan: its own statistics, not
 * yet published. Take a difference: they may also hold the connection's earlier transactions,
 * published only once it has been idle a while.
 */
export async function tableRowsRead (tx: Tx, table: string): Promise<number> {
  const [row] = await execute<{ n: number }>(tx, sql`select coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)::int as n
    from pg_stat_xact_user_tables where relname = ${table}`)
  return row!.n
}

/** Runs `work` in a transaction and counts the rows of `table` it read. */
export async function readingRows<R> (db: Db, table: string, work: (tx: Tx) => Promise<R>): Promise<{ result: R, rowsRead: number }> {
  return db.transaction(async (tx) => {
    const before = await tableRowsRead(tx, table)
    const result = await work(tx)
    return { result, rowsRead: await tableRowsRead(tx, table) - before }
  })
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it returns a value (not undefined), or fails after `ms`. */
export async function until<V> (what: string, check: () => Promise<V | undefined> | V | undefined, ms = 20_000): Promise<V> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

type Asserts = Pick<Test, 'equal' | 'same' | 'match' | 'ok' | 'type'>

export interface ErrorBody { error: string, message: string, requestId: string, details?: Array<Record<string, unknown>> }

/** What `app.inject` answers; the fields the assertions below read. */
export interface Answer { statusCode: number, body: string, headers: Record<string, unknown>, json: <T>() => T }

/**
 * The error body every failure answers: `{ error, message, requestId }` (plus a non-empty
 * `details` when asked for), as JSON, the requestId equal to the Request-Id header. `what`
 * prefixes every assertion's name, for checks made in a loop. Returns the body.
 */
export function expectError (
  t: Asserts,
  res: Answer,
  status: number,
  code: string,
  options: { details?: boolean, message?: RegExp, what?: string } = {}
): ErrorBody {
  const name = (text: string) => options.what === undefined ? text : `${options.what}: ${text}`
  t.equal(res.statusCode, status, name(`status ${status}`))
  t.match(String(res.headers['content-type']), /^application\/json/, name('a JSON body'))
  const body = res.json<ErrorBody>()
  t.same(Object.keys(body).sort(), options.details ? ['details', 'error', 'message', 'requestId'] : ['error', 'message', 'requestId'], name('the error body\'s fields'))
  if (options.details) t.ok(Array.isArray(body.details) && body.details.length > 0, name(`details on ${code}`))
  t.equal(body.error, code, name(`error ${code}`))
  t.type(body.message, 'string', name('the message is a string'))
  t.ok(typeof body.message === 'string' && body.message.length > 0, name('a message'))
  if (options.message) t.match(body.message, options.message, name('the message'))
  t.equal(body.requestId, res.headers['request-id'], name('requestId is the Request-Id header'))
  t.ok(String(body.requestId).length > 0, name('a requestId'))
  return body
}

// ---------------------------------------------------------------------------------------
// Orders

/** Rate limiting has tests of its own; elsewhere it must never interfere. */
export const UNLIMITED = { RATE_LIMIT_MAX: '1000000' }
export const PHONE = '+12133734253'
export const UK_PHONE = '+442079460958'
/** The fields of an order without its items, as create and list answer it. */
export const ORDER_SUMMARY_KEYS = ['address', 'customerName', 'customerPhone', 'date', 'deliveryFee', 'finalTotal', 'id', 'mode', 'note', 'orderNumber', 'productsCount', 'status', 'total', 'updatedAt']

export interface OrderSummary {
  id: string
  orderNumber: string
  mode: 'live' | 'test'
  status: string
  total: number
  finalTotal: number
  productsCount: number
  date: string
  customerName: string
  customerPhone: string | null
  note: string | null
}
export interface OrderItem { productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: number, totalPrice: number }
export interface FullOrder extends OrderSummary { items: OrderItem[] }
export interface OrderPage { items: OrderSummary[], page: number, pageSize: number, total: number }
export interface OrderLine { productId: string, combinationId?: string | null, quantity?: number }

/** A valid create-order body with the given lines (`items` is unknown: bad ones are sent too). */
export function orderBody (items: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { customerName: 'Ada Lovelace', customerPhone: PHONE, items, ...extra }
}

/** An order line; quantity and combinationId are left out unless given. */
export function line (product: { id: string }, quantity?: number, combinationId?: string | null): OrderLine {
  return {
    productId: product.id,
    ...(combinationId === undefined ? {} : { combinationId }),
    ...(quantity === undefined ? {} : { quantity })
  }
}

/**
 * POST /external/v1/orders as JSON with the key. A string body is sent as it is (raw or broken
 * JSON), undefined sends none; a header given as undefined is removed.
 */
export function postOrder (app: App, key: string, body: unknown, headers: Record<string, string | undefined> = {}) {
  const all: Record<string, string> = { ...authHeaders(key), 'content-type': 'application/json' }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) delete all[name]
    else all[name] = value
  }
  return app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: all,
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) })
  })
}
export type OrderAnswer = Awaited<ReturnType<typeof postOrder>>

export function getJson (app: App, key: string, url: string) {
  return app.inject({ method: 'GET', url, headers: authHeaders(key) })
}

/** Asserts a 201 (naming the body otherwise) and returns the order. */
export async function created<Order = OrderSummary> (t: Pick<Test, 'equal'>, res: OrderAnswer): Promise<Order> {
  t.equal(res.statusCode, 201, res.statusCode === 201 ? 'created' : `created, got ${res.body}`)
  return res.json<Order>()
}

/** Everything an order can change: order rows, items, stock, idempotency records. */
export async function orderSnapshot (app: App) {
  const db = app.database.db
  const [counts] = await execute<{ orders: number, items: number, idem: number }>(db, sql`
    select (select count(*)::int from orders) as orders,
           (select count(*)::int from order_items) as items,
           (select count(*)::int from idempotency_keys) as idem`)
  const products = await execute<{ id: string, quantity: number | null }>(db, sql`select id, quantity from products order by id`)
  const combinations = await execute<{ id: string, quantity: number | null }>(db, sql`select id, quantity from combinations order by id`)
  return { ...counts!, products, combinations }
}

/** Sends the request, checks the error and that nothing at all changed. */
export async function expectRefused (
  t: Asserts,
  app: App,
  send: () => Promise<OrderAnswer>,
  status: number,
  code: string,
  options: { details?: boolean, message?: RegExp } = {}
): Promise<OrderAnswer> {
  const before = await orderSnapshot(app)
  const res = await send()
  expectError(t, res, status, code, options)
  t.same(await orderSnapshot(app), before, 'nothing changed: no order, no stock taken, no idempotency record')
  return res
}

export async function productStock (app: App, id: string): Promise<number | null> {
  const [row] = await execute<{ quantity: number | null }>(app.database.db, sql`select quantity from products where id = ${id}`)
  return row!.quantity
}

export async function combinationStock (app: App, id: string): Promise<number | null> {
  const [row] = await execute<{ quantity: number | null }>(app.database.db, sql`select quantity from combinations where id = ${id}`)
  return row!.quantity
}

/** The stored phone, address and fee, which the answer does not show. */
export async function orderRow (app: App, id: string) {
  const [row] = await execute<{ customer_phone: string | null, address: { phone?: string } | null, delivery_fee: string }>(
    app.database.db, sql`select customer_phone, address, delivery_fee::text as delivery_fee from orders where id = ${id}`)
  return row
}

/**
 * The app and catalogue the order tests share: plain (10 in stock), dime (0.10, untracked),
 * pricey (19.99), hidden (unavailable), a shirt whose combinations cover discounts, stock
 * and availability, a cap whose combination takes the product's discount, and an unavailable
 * product with an available combination. Two keys with every scope.
 */
export async function orderStore (t: TestContext) {
  const app = await buildTestApp(t, { env: UNLIMITED })
  const { key, id: keyId } = await makeKey(app)
  const { key: otherKey } = await makeKey(app, [...SCOPES], { name: 'other integrator' })

  const id = () => crypto.randomUUID()
  const V_COLOR = id(); const RED = id(); const BLUE = id()
  const V_SIZE = id(); const SMALL = id(); const LARGE = id()
  const RED_L = id(); const BLUE_S = id(); const RED_S = id(); const BLUE_L = id()
  const CAP_ONE = id(); const HIDDEN_SHIRT_ONE = id()

  const plain = makeProduct({ name: 'Plain Mug', price: 10, quantity: 10 })
  const dime = makeProduct({ name: 'Dime Sticker', price: 0.1, quantity: null })
  const pricey = makeProduct({ name: 'Pricey Pen', price: 19.99, quantity: null })
  const hidden = makeProduct({ name: 'Hidden Lamp', price: 10, quantity: 10, isAvailable: false })
  const shirt: CatalogProduct = {
    id: id(),
    name: 'Shirt',
    price: 20,
    isAvailable: true,
    variants: [
      { id: V_COLOR, name: 'Color', options: [{ id: RED, name: 'Red' }, { id: BLUE, name: 'Blue' }] },
      { id: V_SIZE, name: 'Size', options: [{ id: SMALL, name: 'S' }, { id: LARGE, name: 'L' }] }
    ],
    combinations: [
      // Option ids deliberately listed size first: item names follow the variants' order.
      { id: RED_L, optionIds: [LARGE, RED], price: 20, discount: { type: 'percentage', value: 25 }, quantity: 5, isAvailable: true },
      { id: BLUE_S, optionIds: [SMALL, BLUE], price: 1.15, discount: { type: 'percentage', value: 50 }, quantity: null, isAvailable: true },
      { id: RED_S, optionIds: [RED, SMALL], price: 20, quantity: 5, isAvailable: false },
      { id: BLUE_L, optionIds: [BLUE, LARGE], price: 30, quantity: 2, isAvailable: true }
    ]
  }
  // A combination without a discount of its own takes its product's.
  const capVariant = id(); const capOption = id()
  const cap: CatalogProduct = {
    id: id(),
    name: 'Cap',
    price: 12,
    discount: { type: 'amount', value: 2 },
    isAvailable: true,
    variants: [{ id: capVariant, name: 'Size', options: [{ id: capOption, name: 'One size' }] }],
    combinations: [{ id: CAP_ONE, optionIds: [capOption], price: 12, quantity: null, isAvailable: true }]
  }
  const hsVariant = id(); const hsOption = id()
  const hiddenShirt: CatalogProduct = {
    id: id(),
    name: 'Hidden Shirt',
    price: 10,
    isAvailable: false,
    variants: [{ id: hsVariant, name: 'Size', options: [{ id: hsOption, name: 'M' }] }],
    combinations: [{ id: HIDDEN_SHIRT_ONE, optionIds: [hsOption], price: 10, quantity: 10, isAvailable: true }]
  }
  await importProducts(app, [plain, dime, pricey, hidden, shirt, cap, hiddenShirt])
  return {
    app,
    key,
    keyId,
    otherKey,
    products: { plain, dime, pricey, hidden, shirt, cap, hiddenShirt },
    combinations: { RED_L, BLUE_S, RED_S, BLUE_L, CAP_ONE, HIDDEN_SHIRT_ONE }
  }
}
