// What integrators send and see of orders.
import { Type, type Static } from 'typebox'
import { CursorQuery, Money, Nullable, UpdatedSinceQuery, Page, PageQuery, Text, Timestamp, Uuid, ref } from './common.ts'
import { CREATE_ORDER_EXAMPLE } from './examples.ts'
import { count } from './wording.ts'

export const ORDER_STATUSES = ['pending', 'confirmed', 'processing', 'shipped', 'delivered', 'cancelled'] as const
export type OrderStatus = typeof ORDER_STATUSES[number]

/** A live order number as integrators write it: digits, no leading zero, within a bigint. */
export const ORDER_NUMBER_PATTERN = /^[1-9]\d{0,14}$/
/** A test order number: T and the digits of its own sequence (T100001); t is read as T. */
export const TEST_ORDER_NUMBER_PATTERN = /^[Tt][1-9]\d{0,14}$/

export const ORDER_MODES = ['live', 'test'] as const
export type OrderMode = typeof ORDER_MODES[number]

/**
 * The version of the OrderSummary shape: bump it whenever a field is added or changed, so
 * Idempotency-Key replays stored in an older shape are read again in the new one.
 */
export const ORDER_SHAPE_VERSION = 3
/** The shape before orders had `mode`: every order stored in it is a live one. */
export const SHAPE_BEFORE_MODE = 2

export const MAX_ORDER_LINES = 500
export const MAX_LINE_QUANTITY = 100_000

export const Address = Type.Object({
  lineOne: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  lineTwo: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  city: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  state: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  country: Type.Optional(Nullable(Type.String({ maxLength: 100, description: 'An ISO 3166 alpha-2 code (such as `DE`) also sets the region of phone numbers written without `+`' }))),
  zipCode: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
  phone: Type.Optional(Nullable(Type.String({ maxLength: 50, description: 'Delivery phone; defaults to customerPhone' }))),
  latitude: Type.Optional(Nullable(Type.Number({ minimum: -90, maximum: 90 }))),
  longitude: Type.Optional(Nullable(Type.Number({ minimum: -180, maximum: 180 })))
}, {
  $id: 'Address',
  title: 'Address',
  description: 'Delivery address; when given, the store\'s delivery fee is added to finalTotal. Null fields count as absent.',
  examples: [CREATE_ORDER_EXAMPLE.address]
})
export type Address = Static<typeof Address>

export const OrderItemInput = Type.Object({
  productId: Uuid,
  combinationId: Type.Optional(Nullable(Uuid)),
  // No `default` keyword: generators make a property with a default required, and a missing
  // quantity is already read as 1.
  quantity: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_LINE_QUANTITY, description: `A whole number from 1 to ${count(MAX_LINE_QUANTITY)}; 1 when omitted` }))
}, {
  $id: 'OrderItemInput',
  title: 'OrderItemInput',
  description: 'One order line: a product, with its combinationId when the product has combinations',
  examples: CREATE_ORDER_EXAMPLE.items
})

export const CreateOrderBody = Type.Object({
  customerName: Type.String({ minLength: 1, maxLength: 200, description: 'Must not be blank', examples: ['Ada Lovelace'] }),
  customerPhone: Type.String({ maxLength: 50, description: 'E.164 (`+14155550123`), or national with an ISO alpha-2 `address.country` or the store\'s default country', examples: ['+14155550123'] }),
  note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  items: Type.Array(ref(OrderItemInput), { minItems: 1, maxItems: MAX_ORDER_LINES }),
  address: Type.Optional(Nullable(ref(Address))),
  reservationId: Type.Optional(Nullable({ ...Uuid, description: 'An active reservation of yours: the order takes its held units (the lines must hold the same products, combinations and quantities, in any order, split or merged) and the reservation becomes consumed' }))
}, {
  $id: 'CreateOrderRequest',
  title: 'CreateOrderRequest',
  description: 'Who the order is for, what it holds and, optionally, where it goes',
  examples: [CREATE_ORDER_EXAMPLE]
})
export type CreateOrderBody = Static<typeof CreateOrderBody>

export const OrderItem = Type.Object({
  productId: Uuid,
  combinationId: Nullable(Uuid),
  name: Text(2000, { description: 'Product name, with the combination\'s option names: "T-shirt (Red / L)"; frozen at order time', examples: ['Barista T-shirt (Black / M)'] }),
  quantity: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_LINE_QUANTITY }),
  singlePrice: { ...Money, description: 'sellPrice at the moment of creation' },
  totalPrice: { ...Money, description: 'singlePrice × quantity' }
}, { $id: 'OrderItem', title: 'OrderItem', additionalProperties: false })

export const DeliveryAddress = Type.Object({
  lineOne: Nullable(Text(500)),
  lineTwo: Nullable(Text(500)),
  city: Nullable(Text(200)),
  state: Nullable(Text(200)),
  country: Nullable(Text(100)),
  zipCode: Nullable(Text(50)),
  phone: Type.String({ maxLength: 16, pattern: '^\\+[1-9][0-9]{1,14}$', description: 'The delivery phone in E.164: address.phone as sent, else customerPhone', examples: ['+14155550123'] }),
  latitude: Nullable(Type.Number({ minimum: -90, maximum: 90 })),
  longitude: Nullable(Type.Number({ minimum: -180, maximum: 180 }))
}, { $id: 'DeliveryAddress', title: 'DeliveryAddress', description: 'The delivery address as it was sent; fields not sent are null', additionalProperties: false })
export type DeliveryAddress = Static<typeof DeliveryAddress>

const orderFields = {
  id: Uuid,
  orderNumber: Type.String({ maxLength: 16, pattern: '^T?[1-9][0-9]{0,14}$', description: 'Short, readable, increasing; a test order\'s starts with T (T100001) and counts on its own', examples: ['100042'] }),
  mode: Type.Unsafe<OrderMode>({ type: 'string', enum: [...ORDER_MODES], description: 'live, or test for an order made with a test key: it took no stock and only that key sees it', examples: ['live'] }),
  status: Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES], description: 'pending on creation; then changed by the store. Cancelling a live order puts its units back in stock (its products get product.updated)' }),
  total: { ...Money, description: 'Sum of the items\' totalPrice' },
  deliveryFee: { ...Money, description: 'What finalTotal adds to total: the store\'s delivery fee when an address was given, else 0' },
  finalTotal: { ...Money, description: 'total plus deliveryFee' },
  productsCount: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_ORDER_LINES * MAX_LINE_QUANTITY, description: 'Sum of item quantities' }),
  date: Timestamp('Creation time'),
  customerName: Text(200),
  customerPhone: Nullable(Type.String({ maxLength: 16, pattern: '^\\+[1-9][0-9]{1,14}$', description: 'E.164' })),
  note: Nullable(Text(2000)),
  address: Nullable(ref(DeliveryAddress)),
  updatedAt: Timestamp('When it last changed (creation, a status change)')
}

export const OrderSummary = Type.Object(orderFields, { $id: 'OrderSummary', title: 'OrderSummary', description: 'An order without its items (create and list answers)', additionalProperties: false })
export type OrderSummary = Static<typeof OrderSummary>

export const Order = Type.Object({ ...orderFields, items: Type.Array(ref(OrderItem), { maxItems: MAX_ORDER_LINES }) }, { $id: 'Order', title: 'Order', description: 'An order with its items', additionalProperties: false })
export type Order = Static<typeof Order>

export const OrderPage = Page(ref(OrderSummary), 'OrderPage', 'A page of the calling key\'s orders, newest first')
export type OrderPage = Static<typeof OrderPage>

export const ListOrdersQuery = Type.Object({
  query: Type.Optional(Type.String({ maxLength: 200, description: 'An order number (exact or prefix), or a case-insensitive part of the customer\'s name or phone' })),
  page: Type.Optional(PageQuery),
  updatedSince: Type.Optional(UpdatedSinceQuery),
  cursor: Type.Optional(CursorQuery)
})

export const OrderParams = Type.Object({
  orderNumberOrId: Type.String({ maxLength: 200, description: 'An order number (T100001 for a test order) or an order GUID' })
})

export const TestOrderStatusBody = Type.Object({
  status: Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES], description: 'Where the order goes: pending → confirmed | cancelled, confirmed → processing | cancelled, processing → shipped | cancelled, shipped → delivered' })
}, {
  $id: 'TestOrderStatusRequest',
  title: 'TestOrderStatusRequest',
  description: 'The status a test order moves to, as the store would move a live one',
  additionalProperties: false,
  examples: [{ status: 'confirmed' }]
})
export type TestOrderStatusBody = Static<typeof TestOrderStatusBody>

export const orderSchemas = [Address, OrderItemInput, CreateOrderBody, DeliveryAddress, OrderItem, OrderSummary, Order, OrderPage, TestOrderStatusBody]
