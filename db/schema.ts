// The tables: the source of truth for migrations (`npm run db:generate`).
import { sql } from 'drizzle-orm'
import {
  bigint, bigserial, boolean, check, index, integer, jsonb, numeric, pgSequence, pgTable, primaryKey,
  text, timestamp, uniqueIndex, uuid
} from 'drizzle-orm/pg-core'
import { KEY_MODES } from '../lib/api-key-secret.ts'
import { ORDER_STATUSES } from '../schemas/orders.ts'
import { RESERVATION_STATUSES } from '../schemas/reservations.ts'

// Money is numeric(12,2): exact, read as a string and handled as integer cents in lib/money.ts.
const money = (name: string) => numeric(name, { precision: 12, scale: 2 })
const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow()
const updatedAt = () => timestamp('updated_at', { withTimezone: true }).notNull().defaultNow()

export const categories = pgTable('categories', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull()
})

export const brands = pgTable('brands', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull()
})

export const products = pgTable('products', {
  id: uuid('id').primaryKey(),
  name: text('name').notNull(),
  sku: text('sku'),
  barcode: text('barcode'),
  // null: stock not tracked. For a product with combinations the stock lives on them.
  quantity: integer('quantity'),
  price: money('price').notNull(),
  isAvailable: boolean('is_available').notNull(),
  imageUrl: text('image_url'),
  brandId: uuid('brand_id').references(() => brands.id, { onDelete: 'set null' }),
  // Whether it can be ordered now: marked available, and with stock (or one of its
  // combinations available). Kept on every import and every stock change, so the filter
  // is an index scan.
  available: boolean('available').notNull().default(true),
  // A hash of the product as last imported; null once an order changed its stock. An import
  // that leaves it as it was does not touch updated_at.
  contentHash: text('content_hash'),
  createdAt: createdAt(),
  updatedAt: updatedAt()
}, (t) => [
  index('products_name_order_idx').on(sql`lower(${t.name})`, t.id),
  // name itself last: PostgreSQL reads an expression index without the table only when the
  // columns under the expression are in it too, so the walk of `isAvailable` pages
  // skips index entries instead of fetching every skipped row.
  index('products_available_name_idx').on(t.available, sql`lower(${t.name})`, t.id, t.name),
  index('products_sku_idx').on(t.sku),
  index('products_barcode_idx').on(t.barcode),
  index('products_brand_idx').on(t.brandId),
  index('products_updated_idx').on(t.updatedAt),
  check('products_quantity_not_negative', sql`${t.quantity} >= 0`),
  check('products_price_not_negative', sql`${t.price} >= 0`)
])

// Each product as integrators see it, its JSON rendered once and kept (the read model):
// reads send `body` as it is, with `etag`. Rewritten in the transaction of every change to
// the product (import, stock, a discount window opening or closing); `price_changes_at` is
// when its sellPrice next changes (a discount starting or ending): past it the document is
// stale, rendered again before it is sent until the discount sweep rewrites it.
export const productDocuments = pgTable('product_documents', {
  productId: uuid('product_id').primaryKey().references(() => products.id, { onDelete: 'cascade' }),
  body: text('body').notNull(),
  etag: text('etag').notNull(),
  priceChangesAt: timestamp('price_changes_at', { withTimezone: true })
}, (t) => [index('product_documents_price_changes_idx').on(t.priceChangesAt).where(sql`${t.priceChangesAt} is not null`)])

// Each product's place in the list's order (by lower(name), then id), 1…n without gaps, in
// the whole catalogue (`list` '') and within each brand (`brand:<id>`) and each category
// (`category:<id>`), renumbered by every import: page n of the unfiltered list, or of a list
// filtered by one brand or one category, is a range of positions, as cheap at page 4,000 as
// at page 1. A table of its own, so renumbering never locks the product rows that orders
// update.
export const productListPositions = pgTable('product_list_positions', {
  list: text('list').notNull(),
  position: integer('position').notNull(),
  productId: uuid('product_id').notNull()
}, (t) => [
  primaryKey({ columns: [t.list, t.position] }),
  // A product's place in the whole catalogue: which availability block a stock change moves.
  index('product_list_positions_catalogue_product_idx').on(t.productId).where(sql`${t.list} = ''`)
])

// How many products can be ordered now (and how many cannot) in each block of 1,000
// positions of the whole catalogue's list (block b: positions b × 1,000 + 1 … (b + 1) × 1,000),
// so that page n of `isAvailable` finds its block by these counts and walks at most one
// block of the availability index, instead of every product before the page. Counted again
// by every renumbering; a stock change that turns a product's availability moves its block's
// counts in its own transaction (db/products.ts).
export const productAvailabilityBlocks = pgTable('product_availability_blocks', {
  block: integer('block').primaryKey(),
  available: integer('available').notNull(),
  unavailable: integer('unavailable').notNull()
})

// The whole catalogue's list kept whole, a row a page of 25 (page n: positions (n − 1) × 25 + 1 …
// n × 25), so that a page by number is one row read, as a product is: `body` is its products'
// documents joined by commas (null until built), `etags` and `product_ids` theirs in the same
// order, `price_changes_at` the first time one of their sellPrices changes, `next_sort_name`
// the sort key of its last product when another follows (the next page's cursor starts after
// it). Built by a background job from the documents; a page is served only while no mark
// stands against it in product_list_page_changes (db/list-pages.ts).
export const productListPages = pgTable('product_list_pages', {
  list: text('list').notNull(),
  page: integer('page').notNull(),
  body: text('body'),
  etags: text('etags'),
  productIds: text('product_ids'),
  priceChangesAt: timestamp('price_changes_at', { withTimezone: true }),
  nextSortName: text('next_sort_name')
}, (t) => [primaryKey({ columns: [t.list, t.page] })])

// Pages whose documents changed since they were built: written in the transaction that writes
// the documents (one row a page a write, never updated, so concurrent writers never wait for
// each other here), deleted by the rebuild that reads those documents.
export const productListPageChanges = pgTable('product_list_page_changes', {
  list: text('list').notNull(),
  page: integer('page').notNull()
}, (t) => [index('product_list_page_changes_page_idx').on(t.list, t.page)])

// What `query` searches, one narrow row a product, written by the import with the product
// (stock changes never touch it): a search reads and checks only these rows (db/search.ts).
export const productSearch = pgTable('product_search', {
  productId: uuid('product_id').primaryKey().references(() => products.id, { onDelete: 'cascade' }),
  // lower(name): the list's sort key, so a search sorts its matches without the products.
  sortName: text('sort_name').notNull(),
  // Lower-cased name, SKUs and barcodes of the product and its combinations, one per line.
  searchText: text('search_text').notNull()
}, (t) => [
  index('product_search_trgm_idx').using('gin', sql`${t.searchText} gin_trgm_ops`)
])

// The first page and the total of every search piece many products share, so that such a
// search reads one row instead of its thousands of matches (db/search.ts). PostgreSQL keeps it
// in step with product_search, in the transaction that changes it (migration 0017).
export const searchHeads = pgTable('search_heads', {
  // A run of 3 to 6 letters a-z from a word of the search text.
  piece: text('piece').primaryKey(),
  // How many products' search text contains it.
  products: integer('products').notNull(),
  // The first of those products in the list's order (lower(name), id): a page and one more,
  // with their sort names beside them, for the next page's cursor.
  head: uuid('head').array().notNull(),
  headSortNames: text('head_sort_names').array().notNull()
})

// The search texts a transaction changed, until its commit brings the heads up to date.
export const searchHeadChanges = pgTable('search_head_changes', {
  texts: text('texts').array().notNull()
})

export const productCategories = pgTable('product_categories', {
  productId: uuid('product_id').notNull().references(() => products.id, { onDelete: 'cascade' }),
  categoryId: uuid('category_id').notNull().references(() => categories.id, { onDelete: 'cascade' })
}, (t) => [
  primaryKey({ columns: [t.productId, t.categoryId] }),
  index('product_categories_category_idx').on(t.categoryId)
])

export const variants = pgTable('variants', {
  id: uuid('id').primaryKey(),
  productId: uuid('product_id').notNull().references(() => products.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  position: integer('position').notNull()
}, (t) => [index('variants_product_idx').on(t.productId, t.position)])

export const variantOptions = pgTable('variant_options', {
  id: uuid('id').primaryKey(),
  variantId: uuid('variant_id').notNull().references(() => variants.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  position: integer('position').notNull()
}, (t) => [index('variant_options_variant_idx').on(t.variantId, t.position)])

export const combinations = pgTable('combinations', {
  id: uuid('id').primaryKey(),
  productId: uuid('product_id').notNull().references(() => products.id, { onDelete: 'cascade' }),
  sku: text('sku'),
  barcode: text('barcode'),
  quantity: integer('quantity'),
  price: money('price').notNull(),
  isAvailable: boolean('is_available').notNull(),
  imageUrl: text('image_url'),
  position: integer('position').notNull()
}, (t) => [
  index('combinations_product_idx').on(t.productId, t.position),
  index('combinations_sku_idx').on(t.sku),
  index('combinations_barcode_idx').on(t.barcode),
  check('combinations_quantity_not_negative', sql`${t.quantity} >= 0`),
  check('combinations_price_not_negative', sql`${t.price} >= 0`)
])

export const combinationOptions = pgTable('combination_options', {
  combinationId: uuid('combination_id').notNull().references(() => combinations.id, { onDelete: 'cascade' }),
  optionId: uuid('option_id').notNull().references(() => variantOptions.id, { onDelete: 'cascade' }),
  position: integer('position').notNull()
}, (t) => [primaryKey({ columns: [t.combinationId, t.optionId] })])

// At most one discount per product and per combination; a combination without one uses its product's.
export const discounts = pgTable('discounts', {
  id: uuid('id').primaryKey().defaultRandom(),
  productId: uuid('product_id').references(() => products.id, { onDelete: 'cascade' }),
  combinationId: uuid('combination_id').references(() => combinations.id, { onDelete: 'cascade' }),
  type: text('type', { enum: ['percentage', 'amount'] }).notNull(),
  value: numeric('value', { precision: 12, scale: 2 }).notNull(),
  startsAt: timestamp('starts_at', { withTimezone: true }),
  endsAt: timestamp('ends_at', { withTimezone: true })
}, (t) => [
  uniqueIndex('discounts_product_uq').on(t.productId),
  // Discount windows that open or close: the job that moves products' updated_at finds them.
  index('discounts_starts_idx').on(t.startsAt),
  index('discounts_ends_idx').on(t.endsAt),
  uniqueIndex('discounts_combination_uq').on(t.combinationId),
  check('discounts_one_owner', sql`(${t.productId} is null) <> (${t.combinationId} is null)`),
  check('discounts_type', sql`${t.type} in ('percentage', 'amount')`),
  check('discounts_value', sql`${t.value} >= 0 and (${t.type} <> 'percentage' or ${t.value} <= 100)`)
])

export const apiKeys = pgTable('api_keys', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  // SHA-256 of the secret, hex. The secret itself is never stored.
  keyHash: text('key_hash').notNull().unique(),
  scopes: text('scopes').array().notNull(),
  // active | inactive | revoked; "expired" is derived from expires_at.
  status: text('status', { enum: ['active', 'inactive', 'revoked'] }).notNull().default('active'),
  expiresAt: timestamp('expires_at', { withTimezone: true }),
  lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
  rateLimit: integer('rate_limit'),
  // live | test, fixed at creation: a test key's orders take no stock and only it sees them.
  mode: text('mode', { enum: KEY_MODES }).notNull().default('live'),
  // After a roll, the secret it replaced (its hash) keeps working until previous_key_expires_at;
  // a roll overwrites both, so a key never has more than two secrets.
  previousKeyHash: text('previous_key_hash'),
  previousKeyExpiresAt: timestamp('previous_key_expires_at', { withTimezone: true }),
  createdAt: createdAt(),
  updatedAt: updatedAt()
}, (t) => [
  check('api_keys_status', sql`${t.status} in ('active', 'inactive', 'revoked')`),
  check('api_keys_mode', sql`${t.mode} in ('live', 'test')`),
  // Authentication finds a key by either of its secrets' hashes.
  uniqueIndex('api_keys_previous_key_hash_idx').on(t.previousKeyHash)
])

// Operator settings: deliveryFee, defaultCountry, maintenance.
export const storeSettings = pgTable('store_settings', {
  name: text('name').primaryKey(),
  value: jsonb('value').notNull(),
  updatedAt: updatedAt()
})

// Bumped after every committed catalogue change; instances poll it to drop cached reads.
export const catalogVersion = pgSequence('catalog_version_seq')
// Bumped only by changes that touch the whole catalogue (an import): instances drop every
// cached read. Other changes name their products in the feed, and only those are dropped.
export const catalogResetVersion = pgSequence('catalog_reset_seq')

export const orderNumbers = pgSequence('order_number_seq', { startWith: 100001 })
// Test orders count on their own (shown as T100001, …), so they never use up or reveal live numbers.
export const testOrderNumbers = pgSequence('test_order_number_seq', { startWith: 100001 })

export const orders = pgTable('orders', {
  id: uuid('id').primaryKey(),
  // Unique within a mode: live 100001 and test T100001 are different orders.
  orderNumber: bigint('order_number', { mode: 'number' }).notNull(),
  apiKeyId: uuid('api_key_id').notNull().references(() => apiKeys.id),
  // Its key's mode, copied so lookups by number and the purge of test orders need no join.
  mode: text('mode', { enum: KEY_MODES }).notNull().default('live'),
  status: text('status', { enum: ORDER_STATUSES }).notNull(),
  total: money('total').notNull(),
  deliveryFee: money('delivery_fee').notNull(),
  finalTotal: money('final_total').notNull(),
  productsCount: integer('products_count').notNull(),
  customerName: text('customer_name').notNull(),
  customerPhone: text('customer_phone'),
  note: text('note'),
  address: jsonb('address'),
  createdAt: createdAt(),
  updatedAt: updatedAt()
}, (t) => [
  uniqueIndex('orders_number_mode_uq').on(t.orderNumber, t.mode),
  index('orders_key_created_idx').on(t.apiKeyId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  index('orders_key_updated_idx').on(t.apiKeyId, t.updatedAt),
  index('orders_customer_search_trgm_idx').using('gin', sql`(lower(${t.customerName} || ' ' || coalesce(${t.customerPhone}, ''))) gin_trgm_ops`),
  check('orders_status', sql`${t.status} in (${sql.raw(ORDER_STATUSES.map((s) => `'${s}'`).join(', '))})`),
  check('orders_mode', sql`${t.mode} in ('live', 'test')`),
  // The purge of test orders walks only them.
  index('orders_test_created_idx').on(t.createdAt).where(sql`${t.mode} = 'test'`)
])

// How many orders each key has, spread over a few rows per key so concurrent orders of one
// key rarely wait on the same row: the list's `total` without counting a million rows.
export const ORDER_COUNT_SHARDS = 16
export const orderCounts = pgTable('order_counts', {
  apiKeyId: uuid('api_key_id').notNull().references(() => apiKeys.id, { onDelete: 'cascade' }),
  shard: integer('shard').notNull(),
  count: bigint('count', { mode: 'number' }).notNull()
}, (t) => [primaryKey({ columns: [t.apiKeyId, t.shard] })])

export const orderItems = pgTable('order_items', {
  orderId: uuid('order_id').notNull().references(() => orders.id, { onDelete: 'cascade' }),
  line: integer('line').notNull(),
  // No foreign keys to the catalogue: an order keeps what was sold even if the product goes.
  productId: uuid('product_id').notNull(),
  combinationId: uuid('combination_id'),
  name: text('name').notNull(),
  quantity: integer('quantity').notNull(),
  singlePrice: money('single_price').notNull(),
  totalPrice: money('total_price').notNull(),
  // Units the line took from tracked stock (its quantity, or 0 when untracked or a test order):
  // what cancelling gives back. Null on lines placed before it was recorded.
  taken: integer('taken')
}, (t) => [primaryKey({ columns: [t.orderId, t.line] })])

// Stored responses of create-order calls made with an Idempotency-Key, kept 24 hours.
export const idempotencyKeys = pgTable('idempotency_keys', {
  apiKeyId: uuid('api_key_id').notNull().references(() => apiKeys.id, { onDelete: 'cascade' }),
  key: text('key').notNull(),
  requestHash: text('request_hash').notNull(),
  // null while the first request is still running.
  statusCode: integer('status_code'),
  responseBody: jsonb('response_body'),
  // The shape the body was stored in: a replay of an older shape is read again in today's.
  responseVersion: integer('response_version').notNull().default(1),
  responseHeaders: jsonb('response_headers'),
  createdAt: createdAt(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull()
}, (t) => [
  primaryKey({ columns: [t.apiKeyId, t.key] }),
  index('idempotency_keys_expires_idx').on(t.expiresAt)
])

// The log of changes integrators can follow (the changes feed, webhooks). A change writes its
// event in its own transaction (`seq`, write order). Committed events are then published:
// one publisher at a time gives them `position`, the feed's order, so positions follow the
// order in which events became visible and a reader never sees one appear behind its cursor.
export const changeEvents = pgTable('change_events', {
  seq: bigserial('seq', { mode: 'number' }).primaryKey(),
  // null until published; then 1, 2, 3, … without gaps.
  position: bigint('position', { mode: 'number' }),
  type: text('type').notNull(),
  resourceId: uuid('resource_id').notNull(),
  // The key that owns the order; null for catalogue events (every key may see those).
  apiKeyId: uuid('api_key_id'),
  data: jsonb('data').notNull().default({}),
  occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow(),
  publishedAt: timestamp('published_at', { withTimezone: true })
}, (t) => [
  uniqueIndex('change_events_position_uq').on(t.position),
  index('change_events_unpublished_idx').on(t.seq).where(sql`${t.position} is null`),
  index('change_events_occurred_idx').on(t.occurredAt)
])

// One row: the secret that signs list cursors (made at migration, shared by every instance)
// and how far the retention cleanup has deleted the feed (an older cursor has expired).
export const changeFeed = pgTable('change_feed', {
  id: integer('id').primaryKey(),
  cursorSecret: text('cursor_secret').notNull(),
  prunedThrough: bigint('pruned_through', { mode: 'number' }).notNull().default(0)
}, (t) => [check('change_feed_one_row', sql`${t.id} = 1`)])

// Webhook endpoints: an API key's own receivers of the change events it may see.
export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: uuid('id').primaryKey().defaultRandom(),
  apiKeyId: uuid('api_key_id').notNull().references(() => apiKeys.id, { onDelete: 'cascade' }),
  url: text('url').notNull(),
  // Event types, `order.*`, `product.*` or `*`.
  events: text('events').array().notNull(),
  description: text('description'),
  // `whsec_` + base64 of 32 random bytes: the receiver needs it as it is, so it is stored as it is.
  secret: text('secret').notNull(),
  // After a rotation the previous secret signs beside the new one until it expires.
  previousSecret: text('previous_secret'),
  previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
  status: text('status', { enum: ['enabled', 'disabled'] }).notNull().default('enabled'),
  disabledReason: text('disabled_reason'),
  // The 3-day rule: failing since the first failure after the last success.
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true }),
  failingSince: timestamp('failing_since', { withTimezone: true }),
  createdAt: createdAt(),
  updatedAt: updatedAt()
}, (t) => [
  index('webhook_endpoints_key_idx').on(t.apiKeyId, t.createdAt, t.id),
  check('webhook_endpoints_status', sql`${t.status} in ('enabled', 'disabled')`)
])

// One row per (endpoint, event), written by the publisher in the transaction that numbers
// the event, so every published event an endpoint should receive has its delivery. A
// delivery keeps a copy of its event (type, resource, data, time): the changes feed's
// retention deletes events whatever deliveries still wait for them, and finished deliveries
// are deleted after the same retention.
export const webhookDeliveries = pgTable('webhook_deliveries', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  endpointId: uuid('endpoint_id').notNull().references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
  // The event's feed position: its id is evt_<position>, the webhook-id.
  position: bigint('position', { mode: 'number' }).notNull(),
  type: text('type').notNull(),
  resourceId: uuid('resource_id').notNull(),
  data: jsonb('data').notNull().default({}),
  occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
  status: text('status', { enum: ['pending', 'succeeded', 'failed'] }).notNull().default('pending'),
  // Attempts made to the end (one released at shutdown does not count).
  attempts: integer('attempts').notNull().default(0),
  lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true }),
  lastResponseStatus: integer('last_response_status'),
  // When it is due; while an instance attempts it, the end of that instance's lease.
  nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
  // Set while an instance attempts it: another claims it only after this.
  leaseUntil: timestamp('lease_until', { withTimezone: true }),
  createdAt: createdAt()
}, (t) => [
  uniqueIndex('webhook_deliveries_endpoint_position_uq').on(t.endpointId, t.position.desc()),
  index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
  index('webhook_deliveries_finished_idx').on(t.createdAt).where(sql`${t.status} <> 'pending'`),
  check('webhook_deliveries_status', sql`${t.status} in ('pending', 'succeeded', 'failed')`)
])

// Stock an integrator holds while its shopper checks out. An active hold has already taken its
// units from the stock rows (the same conditional decrement an order makes), so every read sees
// the stock without them; releasing or expiring gives them back, an order consumes them.
export const reservations = pgTable('reservations', {
  id: uuid('id').primaryKey(),
  apiKeyId: uuid('api_key_id').notNull().references(() => apiKeys.id, { onDelete: 'cascade' }),
  // Its key's mode: a test key's hold takes nothing.
  mode: text('mode', { enum: KEY_MODES }).notNull(),
  status: text('status', { enum: RESERVATION_STATUSES }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  // The order that consumed it.
  orderId: uuid('order_id'),
  createdAt: createdAt(),
  updatedAt: updatedAt()
}, (t) => [
  // The expiry sweep walks only active holds by their deadline; the per-key limit counts them.
  index('reservations_active_expires_idx').on(t.expiresAt).where(sql`${t.status} = 'active'`),
  index('reservations_active_key_idx').on(t.apiKeyId).where(sql`${t.status} = 'active'`),
  check('reservations_status', sql`${t.status} in (${sql.raw(RESERVATION_STATUSES.map((s) => `'${s}'`).join(', '))})`),
  check('reservations_mode', sql`${t.mode} in ('live', 'test')`)
])

export const reservationItems = pgTable('reservation_items', {
  reservationId: uuid('reservation_id').notNull().references(() => reservations.id, { onDelete: 'cascade' }),
  line: integer('line').notNull(),
  // No foreign keys to the catalogue, as for order items.
  productId: uuid('product_id').notNull(),
  combinationId: uuid('combination_id'),
  quantity: integer('quantity').notNull(),
  // Units this line has taken from its stock row and gives back on release: its quantity when
  // the stock is tracked, 0 when not (or for a test key); less after an import that left fewer.
  held: integer('held').notNull()
}, (t) => [
  primaryKey({ columns: [t.reservationId, t.line] }),
  index('reservation_items_stock_idx').on(sql`coalesce(${t.combinationId}, ${t.productId})`),
  check('reservation_items_held', sql`${t.held} >= 0 and ${t.held} <= ${t.quantity}`)
])
