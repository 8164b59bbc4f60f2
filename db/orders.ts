// Orders in SQL: the order and its items, the calling key's list and lookups, status updates.
// Rules (what may be ordered, which transitions exist) live in services/; the stock an order
// takes, in db/stock.ts.
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm'
import { toAmount, toCents } from '../lib/money.ts'
import { isUuid, type ListWindow, type SortKey } from '../schemas/common.ts'
import { ORDER_NUMBER_PATTERN, TEST_ORDER_NUMBER_PATTERN, type DeliveryAddress, type Order, type OrderMode, type OrderStatus, type OrderSummary } from '../schemas/orders.ts'
import { containing, execute, runStatement, statement, type Statement, type Tx } from './client.ts'
import { insertEvents } from './events.ts'
import { ORDER_COUNT_SHARDS, orderCounts, orderItems, orders } from './schema.ts'

// The order path's statements are rendered once, at load: their text never changes with the
// order (the lines go as a JSON parameter) and nothing is built per call.

export interface NewOrder {
  apiKeyId: string
  /** The key's mode: a test order is numbered from its own sequence. */
  mode: OrderMode
  total: string
  deliveryFee: string
  finalTotal: string
  productsCount: number
  customerName: string
  customerPhone: string
  note: string | null
  address: unknown
  /** With the units each line took from tracked stock. */
  items: Array<{ productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: string, totalPrice: string, taken: number }>
}

// Each mode's numbers, and how they are written: the sequence name is one of these two, never input.
const NUMBERING: Record<OrderMode, { sequence: SQL, prefix: string }> = {
  live: { sequence: sql.raw('nextval(\'order_number_seq\')'), prefix: '' },
  test: { sequence: sql.raw('nextval(\'test_order_number_seq\')'), prefix: 'T' }
}

// The order, its items, the key's order count and its `order.created` event in one statement;
// its text depends only on the mode (which sequence numbers it). Parameters: see insertOrder.
const insertOrderStatement = (mode: OrderMode) => statement(sql`
    with placed as (
      insert into orders (id, order_number, api_key_id, mode, status, total, delivery_fee, final_total, products_count,
        customer_name, customer_phone, note, address, created_at, updated_at)
      values ($1::uuid, ${NUMBERING[mode].sequence}, $2::uuid, ${sql.raw(`'${mode}'`)}, 'pending', $3::numeric,
        $4::numeric, $5::numeric, $6::integer, $7::text, $8::text, $9::text, $10::jsonb, $11::timestamptz, $11::timestamptz)
      returning *
    ), lines as (
      insert into order_items (order_id, line, product_id, combination_id, name, quantity, single_price, total_price, taken)
      select $1::uuid, i.line, i.product_id, i.combination_id, i.name, i.quantity, i.single_price, i.total_price, i.taken
      from json_to_recordset($12::json) as i(line integer, product_id uuid, combination_id uuid, name text,
        quantity integer, single_price numeric, total_price numeric, taken integer)
    ), counted as (
      insert into order_counts (api_key_id, shard, count) values ($2::uuid, $13::integer, 1)
      on conflict (api_key_id, shard) do update set count = order_counts.count + 1
    ), event as (
      ${insertEvents({ type: 'order.created', resourceId: sql`id`, apiKeyId: sql`api_key_id`, data: sql`jsonb_build_object('orderNumber', ${sql.raw(`'${NUMBERING[mode].prefix}'`)} || order_number::text, 'status', status)`, from: sql`placed` })}
    )
    select id, order_number, api_key_id, mode, status, total::text, delivery_fee::text, final_total::text, products_count,
      customer_name, customer_phone, note, address, to_json(created_at) as created_at, to_json(updated_at) as updated_at
    from placed`)

const INSERT_ORDER: Record<OrderMode, Statement> = { live: insertOrderStatement('live'), test: insertOrderStatement('test') }

/**
 * Inserts the order with this id (its number from its mode's sequence), its items, the key's
 * order count and its `order.created` event, in one statement: one round trip whatever the
 * number of lines.
 */
export async function insertOrder (tx: Tx, id: string, order: NewOrder, now: Date): Promise<OrderSummary> {
  const items = order.items.map((item, line) => ({
    line,
    product_id: item.productId,
    combination_id: item.combinationId,
    name: item.name,
    quantity: item.quantity,
    single_price: item.singlePrice,
    total_price: item.totalPrice,
    taken: item.taken
  }))
  const [row] = await runStatement<RawOrderRow>(tx, INSERT_ORDER[order.mode], [
    id, order.apiKeyId, order.total, order.deliveryFee, order.finalTotal, order.productsCount,
    order.customerName, order.customerPhone, order.note, order.address === null ? null : JSON.stringify(order.address),
    now.toISOString(), JSON.stringify(items), Math.floor(Math.random() * ORDER_COUNT_SHARDS)
  ])
  return toSummary(fromRaw(row!))
}

/** An orders row as raw SQL returns it (snake case, instants as JSON text). */
interface RawOrderRow {
  id: string
  order_number: string | number
  api_key_id: string
  mode: OrderMode
  status: OrderStatus
  total: string
  delivery_fee: string
  final_total: string
  products_count: number
  customer_name: string
  customer_phone: string | null
  note: string | null
  address: unknown
  created_at: string
  updated_at: string
}

function fromRaw (row: RawOrderRow): OrderRow {
  return {
    id: row.id,
    orderNumber: Number(row.order_number),
    apiKeyId: row.api_key_id,
    mode: row.mode,
    status: row.status,
    total: row.total,
    deliveryFee: row.delivery_fee,
    finalTotal: row.final_total,
    productsCount: row.products_count,
    customerName: row.customer_name,
    customerPhone: row.customer_phone,
    note: row.note,
    address: row.address,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at)
  }
}

type OrderRow = typeof orders.$inferSelect

function toSummary (row: OrderRow): OrderSummary {
  return {
    id: row.id,
    orderNumber: NUMBERING[row.mode].prefix + String(row.orderNumber),
    mode: row.mode,
    status: row.status,
    total: toAmount(toCents(row.total)),
    deliveryFee: toAmount(toCents(row.deliveryFee)),
    finalTotal: toAmount(toCents(row.finalTotal)),
    productsCount: row.productsCount,
    date: row.createdAt.toISOString(),
    customerName: row.customerName,
    customerPhone: row.customerPhone,
    note: row.note,
    address: row.address === null ? null : deliveryAddress(row.address as Partial<DeliveryAddress>),
    updatedAt: row.updatedAt.toISOString()
  }
}

const ADDRESS_FIELDS = ['lineOne', 'lineTwo', 'city', 'state', 'country', 'zipCode', 'phone', 'latitude', 'longitude'] as const

/** The stored address with every field present: what was not sent is null. */
function deliveryAddress (stored: Partial<DeliveryAddress>): DeliveryAddress {
  return Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, stored[field] ?? null])) as unknown as DeliveryAddress
}

// Order numbers of `mode` starting with the digits `prefix`, as ranges of the order_number index
// (123 → [123, 124), [1230, 1240), …): a text LIKE could not use it under a generic plan.
function orderNumberPrefixRanges (prefix: string, mode: OrderMode): SQL[] {
  const ranges: SQL[] = []
  for (let scale = 1, digits = prefix.length; digits <= 15; scale *= 10, digits++) {
    const low = Number(prefix) * scale
    ranges.push(sql`(${orders.orderNumber} >= ${low} and ${orders.orderNumber} < ${low + scale} and ${orders.mode} = ${mode})`)
  }
  return ranges
}

/** An order number as written (100001, T100001) read as its mode and digits; null for anything else. */
function readOrderNumber (text: string): { mode: OrderMode, digits: string } | null {
  if (ORDER_NUMBER_PATTERN.test(text)) return { mode: 'live', digits: text }
  if (TEST_ORDER_NUMBER_PATTERN.test(text)) return { mode: 'test', digits: text.slice(1) }
  return null
}

export interface OrderFilters {
  query?: string | undefined
  /** ISO 8601 with offset: only orders whose updated_at is at or after it. */
  updatedSince?: string | undefined
}

/** A page of the key's orders, newest first, then by id; one row more tells whether another page follows. */
export async function listOrdersForKey (db: Tx, apiKeyId: string, filters: OrderFilters, window: ListWindow) {
  const { query, updatedSince } = filters
  const filtered = orderListConditions(apiKeyId, filters)
  // The sort key keeps created_at to the microsecond, as text: a JavaScript date would round it.
  const after = window.after === null ? sql`true` : sql`(${orders.createdAt}, ${orders.id}) < (${window.after[0]}::timestamptz, ${window.after[1]}::uuid)`
  // The page's ids first: unfiltered, the rows OFFSET skips are read from the index alone
  // (key, created_at, id), not fetched from the table; only the page's rows are.
  const pageIds = db.select({ id: orders.id }).from(orders).where(and(filtered, after))
    .orderBy(desc(orders.createdAt), desc(orders.id)).limit(window.limit + 1).offset(window.offset)
  const [rows, counts] = await Promise.all([
    db.select({ order: orders, sortKey: sql<string>`${orders.createdAt}::text` }).from(orders).where(inArray(orders.id, pageIds))
      .orderBy(desc(orders.createdAt), desc(orders.id)),
    // Without a filter the total is the key's order count, kept beside the orders.
    query || updatedSince !== undefined
      ? db.select({ total: sql<number>`count(*)::int` }).from(orders).where(filtered)
      : db.select({ total: sql<number>`coalesce(sum(${orderCounts.count}), 0)::int` }).from(orderCounts).where(eq(orderCounts.apiKeyId, apiKeyId))
  ])
  const shown = rows.slice(0, window.limit)
  const last = shown.at(-1)
  return {
    items: shown.map((row) => toSummary(row.order)),
    total: counts[0]!.total,
    next: rows.length > window.limit && last ? [last.sortKey, last.order.id] as SortKey : null
  }
}

/** The key's list of orders with its filters, as a condition on `orders`. */
function orderListConditions (apiKeyId: string, { query, updatedSince }: OrderFilters): SQL {
  const conditions: SQL[] = [eq(orders.apiKeyId, apiKeyId)]
  if (query) {
    const search: SQL[] = [sql`lower(${orders.customerName} || ' ' || coalesce(${orders.customerPhone}, '')) like ${containing(query.toLowerCase())}`]
    const number = readOrderNumber(query)
    if (number !== null) search.push(...orderNumberPrefixRanges(number.digits, number.mode))
    conditions.push(sql`(${sql.join(search, sql` or `)})`)
  }
  if (updatedSince !== undefined) conditions.push(sql`${orders.updatedAt} >= ${updatedSince}::timestamptz`)
  return and(...conditions)!
}

// A number names one order of its mode: 100001 is never the test order T100001.
function orderMatch (orderNumberOrId: string): SQL | null {
  if (isUuid(orderNumberOrId)) return eq(orders.id, orderNumberOrId.toLowerCase())
  const number = readOrderNumber(orderNumberOrId)
  return number === null ? null : and(eq(orders.orderNumber, Number(number.digits)), eq(orders.mode, number.mode))!
}

// An order with its items in one round trip, by id or by its mode and number, for one key.
const ORDER_COLUMNS = sql.raw(`o.id, o.order_number, o.api_key_id, o.mode, o.status, o.total::text, o.delivery_fee::text, o.final_total::text,
      o.products_count, o.customer_name, o.customer_phone, o.note, o.address, to_json(o.created_at) as created_at, to_json(o.updated_at) as updated_at`)
const ORDER_ITEMS = sql.raw(`coalesce((select json_agg(json_build_object('productId', i.product_id, 'combinationId', i.combination_id, 'name', i.name,
        'quantity', i.quantity, 'singlePrice', i.single_price::text, 'totalPrice', i.total_price::text) order by i.line)
      from order_items i where i.order_id = o.id), '[]'::json) as items`)
const ORDER_BY_ID = statement(sql`select ${ORDER_COLUMNS}, ${ORDER_ITEMS} from orders o where o.id = $1::uuid and o.api_key_id = $2::uuid`)
const ORDER_BY_NUMBER = statement(sql`select ${ORDER_COLUMNS}, ${ORDER_ITEMS} from orders o
    where o.order_number = $1::bigint and o.mode = $2::text and o.api_key_id = $3::uuid`)

interface StoredItem { productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: string, totalPrice: string }

/** The order with its items, only when the calling key created it. */
export async function findOrderForKey (db: Tx, apiKeyId: string, orderNumberOrId: string): Promise<Order | null> {
  let rows: OrderWithItemsRow[]
  if (isUuid(orderNumberOrId)) {
    rows = await runStatement(db, ORDER_BY_ID, [orderNumberOrId.toLowerCase(), apiKeyId])
  } else {
    const number = readOrderNumber(orderNumberOrId)
    if (number === null) return null
    rows = await runStatement(db, ORDER_BY_NUMBER, [number.digits, number.mode, apiKeyId])
  }
  const [row] = rows
  return row ? toOrder(row) : null
}

/** A row of ORDER_COLUMNS and ORDER_ITEMS as the Order GET answers. */
export type OrderWithItemsRow = RawOrderRow & { items: StoredItem[] }

export function toOrder (row: OrderWithItemsRow): Order {
  return {
    ...toSummary(fromRaw(row)),
    items: row.items.map((item) => ({
      productId: item.productId,
      combinationId: item.combinationId,
      name: item.name,
      quantity: item.quantity,
      singlePrice: toAmount(toCents(item.singlePrice)),
      totalPrice: toAmount(toCents(item.totalPrice))
    }))
  }
}

// An order's document as GET order answers it, built by PostgreSQL for an export to pass on:
// the schema's fields in its order, strings escaped as JSON.stringify escapes them (PostgreSQL's
// JSON escaping is the same for any text it can hold), amounts as JavaScript prints cents ÷ 100
// (trim_scale: 12.50 → 12.5), instants as toISOString prints them (milliseconds, truncated as
// Date truncates). The route's test compares every line with GET order.
const ISO_INSTANT = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const COORDINATES: readonly string[] = ['latitude', 'longitude']
const addressFieldPrints = (f: string) => f === 'phone'
  ? 'coalesce(jsonb_typeof(o.address->\'phone\'), \'null\') = \'string\''
  : COORDINATES.includes(f)
    ? `(case when jsonb_typeof(o.address->'${f}') = 'number' then abs((o.address->>'${f}')::numeric) >= 0.000001 or (o.address->>'${f}')::numeric = 0
        else coalesce(jsonb_typeof(o.address->'${f}'), 'null') = 'null' end)`
    : `coalesce(jsonb_typeof(o.address->'${f}'), 'null') in ('string', 'null')`
// The stored address as the API stores it, so that its JSON prints as the app prints it: text
// fields strings or absent, a phone, coordinates numbers or absent and, when not 0, at least
// 1e-6 across (JavaScript prints a smaller one with an exponent, PostgreSQL in full).
const ADDRESS_PRINTS_AS_STORED = `coalesce(o.address is null or (jsonb_typeof(o.address) = 'object' and ${ADDRESS_FIELDS.map(addressFieldPrints).join(' and ')}), false)`
const addressField = (f: string) => `coalesce((o.address->'${f}')::text, 'null')`
const ORDER_DOCUMENT = `'{"id":"' || o.id::text || '","orderNumber":"' || case when o.mode = 'test' then 'T' else '' end || o.order_number::text
      || '","mode":' || to_json(o.mode)::text || ',"status":' || to_json(o.status)::text
      || ',"total":' || trim_scale(o.total)::text || ',"deliveryFee":' || trim_scale(o.delivery_fee)::text
      || ',"finalTotal":' || trim_scale(o.final_total)::text || ',"productsCount":' || o.products_count::text
      || ',"date":"' || ${ISO_INSTANT('o.created_at')} || '","customerName":' || to_json(o.customer_name)::text
      || ',"customerPhone":' || coalesce(to_json(o.customer_phone)::text, 'null') || ',"note":' || coalesce(to_json(o.note)::text, 'null')
      || ',"address":' || case when o.address is null then 'null' else '{'
        || ${ADDRESS_FIELDS.map((f, i) => `'${i === 0 ? '' : ','}"${f}":' || ${addressField(f)}`).join(' || ')} || '}' end
      || ',"updatedAt":"' || ${ISO_INSTANT('o.updated_at')} || '","items":' || coalesce((select '[' || string_agg('{"productId":"' || i.product_id::text
        || '","combinationId":' || coalesce('"' || i.combination_id::text || '"', 'null') || ',"name":' || to_json(i.name)::text
        || ',"quantity":' || i.quantity::text || ',"singlePrice":' || trim_scale(i.single_price)::text
        || ',"totalPrice":' || trim_scale(i.total_price)::text || '}', ',' order by i.line) || ']'
        from order_items i where i.order_id = o.id), '[]') || '}'`

/**
 * The key's orders its list's filters select, in the list's order (newest first, then id):
 * each row its document as GET order answers it (`body`) or, where the statement cannot promise
 * the app's exact bytes (ADDRESS_PRINTS_AS_STORED), the order's id for the app to render it
 * (`render_id`, then readOrdersForKey). The subquery is pulled up by the planner, so the list's
 * index serves the order.
 */
export function selectOrderDocuments (apiKeyId: string, filters: OrderFilters): SQL {
  return sql`select case when ${sql.raw(ADDRESS_PRINTS_AS_STORED)} then ${sql.raw(ORDER_DOCUMENT)} end as body,
      case when not ${sql.raw(ADDRESS_PRINTS_AS_STORED)} then o.id end as render_id
    from (select * from orders where ${orderListConditions(apiKeyId, filters)}) o
    order by o.created_at desc, o.id desc`
}

/** The key's orders with these ids (GUIDs, lower case), with their items; another key's are not among them. */
export async function readOrdersForKey (db: Tx, apiKeyId: string, ids: readonly string[]): Promise<Order[]> {
  const rows = await execute<OrderWithItemsRow>(db, sql`select ${ORDER_COLUMNS}, ${ORDER_ITEMS} from orders o
    where o.id = any(${`{${ids.join(',')}}`}::uuid[]) and o.api_key_id = ${apiKeyId}::uuid`)
  return rows.map(toOrder)
}

/** An order without items, by id, whoever created it (for replays stored in an older shape). */
export async function findOrderSummary (db: Tx, id: string): Promise<OrderSummary | null> {
  const [row] = await db.select().from(orders).where(eq(orders.id, id))
  return row ? toSummary(row) : null
}

/**
 * An order's id, mode and the products its lines name, by number or id (with `apiKeyId`, only that
 * key's). Read without a lock: an order's lines never change.
 */
export async function findOrderProducts (db: Tx, orderNumberOrId: string, apiKeyId?: string): Promise<{ id: string, mode: OrderMode, productIds: string[] } | null> {
  const match = orderMatch(orderNumberOrId)
  if (match === null) return null
  const [row] = await db.select({ id: orders.id, mode: orders.mode }).from(orders).where(apiKeyId === undefined ? match : and(match, eq(orders.apiKeyId, apiKeyId)))
  if (!row) return null
  const lines = await db.selectDistinct({ productId: orderItems.productId }).from(orderItems).where(eq(orderItems.orderId, row.id))
  return { ...row, productIds: lines.map((l) => l.productId) }
}

/**
 * The order's current status, its row locked until the transaction ends; with `apiKeyId`,
 * only when that key created it.
 */
export async function lockOrder (tx: Tx, orderNumberOrId: string, apiKeyId?: string): Promise<{ id: string, status: OrderStatus, apiKeyId: string, mode: OrderMode } | null> {
  const match = orderMatch(orderNumberOrId)
  if (match === null) return null
  const [row] = await tx.select({ id: orders.id, status: orders.status, apiKeyId: orders.apiKeyId, mode: orders.mode }).from(orders)
    .where(apiKeyId === undefined ? match : and(match, eq(orders.apiKeyId, apiKeyId))).for('update')
  return row ?? null
}

export async function updateOrderStatus (tx: Tx, id: string, status: OrderStatus, now: Date): Promise<OrderSummary> {
  const [updated] = await tx.update(orders).set({ status, updatedAt: now }).where(eq(orders.id, id)).returning()
  return toSummary(updated!)
}

/**
 * Deletes the test orders created before `before`, with their items (by cascade), the
 * Idempotency-Key records that would replay them and their share of their keys' order counts;
 * returns how many orders went. One statement, so the counts always match what is left.
 */
export async function deleteTestOrders (db: Tx, before: Date): Promise<number> {
  const [row] = await execute<{ n: number }>(db, sql`
    with gone as (
      delete from orders where mode = 'test' and created_at < ${before.toISOString()}::timestamptz
      returning id, api_key_id
    ), per_key as (
      select api_key_id, count(*)::bigint as n from gone group by api_key_id
    ), recounted as (
      -- Taken from one shard per key, relative to what the row holds when locked, so a test
      -- order placed meanwhile is still counted; the list's total reads only the sum.
      update order_counts c set count = c.count - p.n from per_key p
      where c.api_key_id = p.api_key_id and c.shard = (select min(shard) from order_counts where api_key_id = p.api_key_id)
    ), forgotten as (
      delete from idempotency_keys i using gone g
      where i.api_key_id = g.api_key_id and i.response_body->>'id' = g.id::text
    )
    select count(*)::int as n from gone`)
  return row!.n
}
