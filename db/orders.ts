// Orders: creation (stock, prices and the idempotency record in one transaction), the
// calling key's list and lookups, and the operator's status changes.
import { createHash } from 'node:crypto'
import { and, desc, eq, sql, type SQL } from 'drizzle-orm'
import { apiError, errorCodes } from '../errors.ts'
import { multiply, sellPriceCents, toAmount, toCents, toDecimalText, type Cents, type Discount } from '../lib/money.ts'
import type { OrderLine, OrderRequest } from '../lib/order-request.ts'
import { isUuid } from '../schemas/common.ts'
import type { Order, OrderStatus, OrderSummary } from '../schemas/orders.ts'
import { containing, execute, type Db, type Tx } from './client.ts'
import { ORDER_COUNT_SHARDS, idempotencyKeys, orderCounts, orderItems, orders } from './schema.ts'

// numeric(12,2) holds up to 9,999,999,999.99.
const MAX_AMOUNT_CENTS = 999_999_999_999

/** Operator transitions (decisions §3); the external API never changes an order. */
export const STATUS_TRANSITIONS: Record<OrderStatus, OrderStatus[]> = {
  pending: ['confirmed', 'cancelled'],
  confirmed: ['processing', 'cancelled'],
  processing: ['shipped', 'cancelled'],
  shipped: ['delivered'],
  delivered: [],
  cancelled: []
}

interface SellableRow {
  product_id: string
  combination_id: string | null
  name: string
  option_names: string[] | null
  price: string
  discount: Discount | null
  quantity: number | null
  is_available: boolean
  /** For a product row: whether it has combinations (then one must be chosen). */
  has_combinations: boolean
  /** For a combination row: the product it belongs to, and whether that product is available. */
  owner_id: string | null
  owner_available: boolean | null
}

/** What was stored for an Idempotency-Key: the first response, to be replayed. */
export interface StoredResponse { body: OrderSummary, location: string }

export type IdempotencyLookup =
  | { kind: 'none' }
  | { kind: 'replay', response: StoredResponse }
  | { kind: 'mismatch' }

export interface IdempotencyInput { key: string, requestHash: string }

/** A hash of the body as a JSON value: key order and whitespace do not change it. */
export function requestHash (body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical)
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
    }
    return value
  }
  return createHash('sha256').update(JSON.stringify(canonical(body))).digest('hex')
}

export async function findIdempotentResponse (db: Tx, apiKeyId: string, input: IdempotencyInput): Promise<IdempotencyLookup> {
  const [row] = await db.select().from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.apiKeyId, apiKeyId), eq(idempotencyKeys.key, input.key), sql`${idempotencyKeys.expiresAt} > now()`))
  if (!row) return { kind: 'none' }
  if (row.requestHash !== input.requestHash) return { kind: 'mismatch' }
  return { kind: 'replay', response: { body: row.responseBody as OrderSummary, location: (row.responseHeaders as { location: string }).location } }
}

export async function deleteExpiredIdempotencyKeys (db: Tx): Promise<number> {
  const rows = await execute<{ n: number }>(db, sql`with gone as (delete from idempotency_keys where expires_at <= now() returning 1) select count(*)::int as n from gone`)
  return rows[0]!.n
}

function itemName (row: SellableRow): string {
  return row.option_names && row.option_names.length > 0 ? `${row.name} (${row.option_names.join(' / ')})` : row.name
}

/** Loads every product and combination the lines name, in one round trip. */
async function loadSellables (tx: Tx, lines: OrderLine[]): Promise<Map<string, SellableRow>> {
  const productIds = [...new Set(lines.map((l) => l.productId))]
  const combinationIds = [...new Set(lines.flatMap((l) => (l.combinationId ? [l.combinationId] : [])))]
  const list = (ids: string[]) => sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)
  const discount = (owner: SQL) => sql`(select json_build_object('type', d.type, 'value', d.value::text, 'startsAt', d.starts_at, 'endsAt', d.ends_at)
    from discounts d where ${owner})`
  const parts = [sql`
    select p.id as product_id, null::uuid as combination_id, p.name, null::json as option_names, p.price::text as price,
      ${discount(sql`d.product_id = p.id`)} as discount, p.quantity, p.is_available,
      exists (select 1 from combinations c where c.product_id = p.id) as has_combinations, null::uuid as owner_id, null::boolean as owner_available
    from products p where p.id in (${list(productIds)})`]
  if (combinationIds.length > 0) {
    parts.push(sql`
    select c.product_id, c.id, p.name,
      (select json_agg(o.name order by co.position) from combination_options co join variant_options o on o.id = co.option_id
            where co.combination_id = c.id),
      c.price::text, coalesce(${discount(sql`d.combination_id = c.id`)}, ${discount(sql`d.product_id = p.id`)}),
      c.quantity, c.is_available, false, c.product_id, p.is_available
    from combinations c join products p on p.id = c.product_id where c.id in (${list(combinationIds)})`)
  }
  const rows = await execute<SellableRow>(tx, sql.join(parts, sql` union all `))
  return new Map(rows.map((r) => [r.combination_id ? `c:${r.combination_id}` : `p:${r.product_id}`, r]))
}

export interface CreatedOrder { order: OrderSummary, catalogChanged: boolean }

/**
 * Creates the order wholly or not at all: prices from the catalogue at this moment, stock
 * taken with conditional updates (never below zero, whatever the concurrency), the
 * Idempotency-Key record in the same transaction.
 */
export async function createOrder (
  db: Db,
  input: { apiKeyId: string, request: OrderRequest, deliveryFee: string, idempotency: IdempotencyInput | null, locationOf: (order: OrderSummary) => string },
  now = new Date()
): Promise<CreatedOrder | { replay: StoredResponse } | { mismatch: true }> {
  try {
    return await createOrderInTransaction(db, input, now)
  } catch (err) {
    // Our lock_timeout ran out waiting for a concurrent request with the same key.
    if (errorCodes(err).includes('55P03')) {
      throw apiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry shortly', { headers: { 'retry-after': '1' } })
    }
    throw err
  }
}

type CreateOrderInput = Parameters<typeof createOrder>[1]

async function createOrderInTransaction (db: Db, input: CreateOrderInput, now: Date): Promise<CreatedOrder | { replay: StoredResponse } | { mismatch: true }> {
  const { request } = input
  return db.transaction(async (tx) => {
    if (input.idempotency) {
      // A concurrent request with the same key holds the row's lock until it commits; wait a
      // bounded time, then answer idempotency_key_in_use.
      await tx.execute(sql`set local lock_timeout = '5s'`)
      const inserted = await execute<{ key: string }>(tx, sql`
        insert into idempotency_keys (api_key_id, key, request_hash, expires_at)
        values (${input.apiKeyId}, ${input.idempotency.key}, ${input.idempotency.requestHash}, now() + interval '24 hours')
        on conflict (api_key_id, key) do update set request_hash = excluded.request_hash, status_code = null,
          response_body = null, response_headers = null, created_at = now(), expires_at = excluded.expires_at
          where idempotency_keys.expires_at <= now()
        returning key`)
      if (inserted.length === 0) {
        const previous = await findIdempotentResponse(tx, input.apiKeyId, input.idempotency)
        if (previous.kind === 'replay') return { replay: previous.response }
        if (previous.kind === 'mismatch') return { mismatch: true as const }
      }
    }

    const sellables = await loadSellables(tx, request.lines)
    // Unknown products answer invalid_item before any other catalogue check (decisions §3).
    request.lines.forEach((line, i) => {
      if (!sellables.has(`p:${line.productId}`)) throw apiError('invalid_item', `items[${i}].productId matches no product`)
    })
    // Lines of the same product or combination are checked against their summed quantity.
    const wanted = new Map<string, { row: SellableRow, quantity: number }>()
    const items = request.lines.map((line, i) => {
      const product = sellables.get(`p:${line.productId}`)!
      let row = product
      if (line.combinationId !== null) {
        const combination = sellables.get(`c:${line.combinationId}`)
        if (!combination || combination.owner_id !== line.productId) {
          throw apiError('order_creation_failed', `items[${i}]: combination ${line.combinationId} is not a combination of product ${line.productId}`)
        }
        if (!combination.owner_available) throw apiError('order_creation_failed', `items[${i}]: product "${product.name}" is not available`)
        row = combination
      } else if (product.has_combinations) {
        throw apiError('order_creation_failed', `items[${i}]: product "${product.name}" has combinations; send a combinationId`)
      }
      if (!row.is_available) throw apiError('order_creation_failed', `items[${i}]: "${itemName(row)}" is not available`)
      const key = row.combination_id ?? row.product_id
      const entry = wanted.get(key) ?? { row, quantity: 0 }
      entry.quantity += line.quantity
      wanted.set(key, entry)
      const singlePrice = sellPriceCents(toCents(row.price), row.discount, now)
      const totalPrice = multiply(singlePrice, line.quantity)
      if (totalPrice > MAX_AMOUNT_CENTS) throw apiError('order_creation_failed', `items[${i}]: the line total is larger than an order can hold`)
      return { line, row, singlePrice, totalPrice }
    })
    for (const { row, quantity } of wanted.values()) {
      if (row.quantity !== null && row.quantity < quantity) {
        throw apiError('order_creation_failed', `Not enough stock for "${itemName(row)}": ${row.quantity} available, ${quantity} ordered`)
      }
    }

    // Conditional decrements in a fixed order (by id), so concurrent orders never deadlock;
    // the re-check of `quantity >= n` runs on the latest committed row. The table's check
    // constraint (quantity >= 0) is the last guard.
    const tracked = [...wanted.entries()].filter(([, w]) => w.row.quantity !== null).sort(([a], [b]) => (a < b ? -1 : 1))
    for (const [id, { row, quantity }] of tracked) {
      const table = row.combination_id ? sql`combinations` : sql`products`
      const updated = await execute<{ id: string }>(tx, sql`update ${table} set quantity = quantity - ${quantity}
        where id = ${id} and quantity >= ${quantity} returning id`)
      if (updated.length === 0) {
        throw apiError('order_creation_failed', `Not enough stock for "${itemName(row)}": it sold out while ordering`)
      }
    }

    const total: Cents = items.reduce((sum, item) => sum + item.totalPrice, 0)
    const deliveryFee: Cents = request.address ? toCents(input.deliveryFee) : 0
    if (total + deliveryFee > MAX_AMOUNT_CENTS) throw apiError('order_creation_failed', 'The order total is larger than an order can hold')
    const id = crypto.randomUUID()
    const [created] = await tx.insert(orders).values({
      id,
      orderNumber: sql`nextval('order_number_seq')`,
      apiKeyId: input.apiKeyId,
      status: 'pending',
      total: toDecimalText(total),
      deliveryFee: toDecimalText(deliveryFee),
      finalTotal: toDecimalText(total + deliveryFee),
      productsCount: request.lines.reduce((sum, l) => sum + l.quantity, 0),
      customerName: request.customerName,
      customerPhone: request.customerPhone,
      note: request.note,
      address: request.address,
      createdAt: now,
      updatedAt: now
    }).returning()
    await tx.insert(orderItems).values(items.map((item, line) => ({
      orderId: id,
      line,
      productId: item.row.product_id,
      combinationId: item.row.combination_id,
      name: itemName(item.row),
      quantity: item.line.quantity,
      singlePrice: toDecimalText(item.singlePrice),
      totalPrice: toDecimalText(item.totalPrice)
    })))

    await tx.insert(orderCounts).values({ apiKeyId: input.apiKeyId, shard: Math.floor(Math.random() * ORDER_COUNT_SHARDS), count: 1 })
      .onConflictDoUpdate({ target: [orderCounts.apiKeyId, orderCounts.shard], set: { count: sql`${orderCounts.count} + 1` } })

    const order = toSummary(created!)
    if (input.idempotency) {
      await tx.update(idempotencyKeys).set({ statusCode: 201, responseBody: order, responseHeaders: { location: input.locationOf(order) } })
        .where(and(eq(idempotencyKeys.apiKeyId, input.apiKeyId), eq(idempotencyKeys.key, input.idempotency.key)))
    }
    return { order, catalogChanged: tracked.length > 0 }
  })
}

type OrderRow = typeof orders.$inferSelect

function toSummary (row: OrderRow): OrderSummary {
  return {
    id: row.id,
    orderNumber: String(row.orderNumber),
    status: row.status,
    total: toAmount(toCents(row.total)),
    finalTotal: toAmount(toCents(row.finalTotal)),
    productsCount: row.productsCount,
    date: row.createdAt.toISOString(),
    customerName: row.customerName,
    customerPhone: row.customerPhone,
    note: row.note
  }
}

// Order numbers starting with the digits `prefix`, as ranges of the order_number index
// (123 → [123, 124), [1230, 1240), …): a text LIKE could not use it under a generic plan.
function orderNumberPrefixRanges (prefix: string): SQL[] {
  const ranges: SQL[] = []
  for (let scale = 1, digits = prefix.length; digits <= 15; scale *= 10, digits++) {
    const low = Number(prefix) * scale
    ranges.push(sql`(${orders.orderNumber} >= ${low} and ${orders.orderNumber} < ${low + scale})`)
  }
  return ranges
}

export async function listOrdersForKey (db: Tx, apiKeyId: string, query: string | undefined, page: { limit: number, offset: number }) {
  const conditions: SQL[] = [eq(orders.apiKeyId, apiKeyId)]
  if (query) {
    const search: SQL[] = [sql`lower(${orders.customerName} || ' ' || coalesce(${orders.customerPhone}, '')) like ${containing(query.toLowerCase())}`]
    if (/^[1-9]\d{0,14}$/.test(query)) search.push(...orderNumberPrefixRanges(query))
    conditions.push(sql`(${sql.join(search, sql` or `)})`)
  }
  const where = and(...conditions)
  const [rows, counts] = await Promise.all([
    db.select().from(orders).where(where).orderBy(desc(orders.createdAt), desc(orders.id)).limit(page.limit).offset(page.offset),
    // Without a query the total is the key's order count, kept beside the orders.
    query
      ? db.select({ total: sql<number>`count(*)::int` }).from(orders).where(where)
      : db.select({ total: sql<number>`coalesce(sum(${orderCounts.count}), 0)::int` }).from(orderCounts).where(eq(orderCounts.apiKeyId, apiKeyId))
  ])
  return { items: rows.map(toSummary), total: counts[0]!.total }
}

function orderMatch (orderNumberOrId: string): SQL | null {
  if (isUuid(orderNumberOrId)) return eq(orders.id, orderNumberOrId.toLowerCase())
  if (/^[1-9]\d{0,14}$/.test(orderNumberOrId)) return eq(orders.orderNumber, Number(orderNumberOrId))
  return null
}

/** The order with its items, only when the calling key created it. */
export async function findOrderForKey (db: Tx, apiKeyId: string, orderNumberOrId: string): Promise<Order | null> {
  const match = orderMatch(orderNumberOrId)
  if (match === null) return null
  const [row] = await db.select().from(orders).where(and(match, eq(orders.apiKeyId, apiKeyId)))
  if (!row) return null
  const items = await db.select().from(orderItems).where(eq(orderItems.orderId, row.id)).orderBy(orderItems.line)
  return {
    ...toSummary(row),
    items: items.map((item) => ({
      productId: item.productId,
      combinationId: item.combinationId,
      name: item.name,
      quantity: item.quantity,
      singlePrice: toAmount(toCents(item.singlePrice)),
      totalPrice: toAmount(toCents(item.totalPrice))
    }))
  }
}

export type StatusChange =
  | { ok: true, order: OrderSummary, from: OrderStatus }
  | { ok: false, reason: 'not_found' }
  | { ok: false, reason: 'forbidden', from: OrderStatus, allowed: OrderStatus[] }

/** The operator's status change, with the transitions of decisions §3 enforced. */
export async function setOrderStatus (db: Db, orderNumberOrId: string, status: OrderStatus): Promise<StatusChange> {
  const match = orderMatch(orderNumberOrId)
  if (match === null) return { ok: false, reason: 'not_found' }
  return db.transaction(async (tx) => {
    const [row] = await tx.select().from(orders).where(match).for('update')
    if (!row) return { ok: false, reason: 'not_found' } as const
    const allowed = STATUS_TRANSITIONS[row.status]
    if (!allowed.includes(status)) return { ok: false, reason: 'forbidden', from: row.status, allowed } as const
    const [updated] = await tx.update(orders).set({ status, updatedAt: new Date() }).where(eq(orders.id, row.id)).returning()
    return { ok: true, order: toSummary(updated!), from: row.status } as const
  })
}
