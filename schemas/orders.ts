// What integrators send and see of orders.
import { Type, type Static } from 'typebox'
import { Money, Nullable, Page, PageQuery, Uuid, ref } from './common.ts'

export const ORDER_STATUSES = ['pending', 'confirmed', 'processing', 'shipped', 'delivered', 'cancelled'] as const
export type OrderStatus = typeof ORDER_STATUSES[number]

/** An order number as integrators write it: digits, no leading zero, within a bigint. */
export const ORDER_NUMBER_PATTERN = /^[1-9]\d{0,14}$/

/**
 * The version of the OrderSummary shape: bump it whenever a field is added or changed, so
 * Idempotency-Key replays stored in an older shape are read again in the new one.
 */
export const ORDER_SHAPE_VERSION = 1

export const MAX_ORDER_LINES = 500
export const MAX_LINE_QUANTITY = 100_000

// The request examples work as they are against the demo catalogue (services/demo-catalog.ts),
// as often as they are sent: both lines are of stock that is not tracked. The first is
// Espresso Blend 1 kg, the second the made-to-order Roaster Hoodie in XL, without quantity.
const EXAMPLE_ITEMS = [
  { productId: 'd3e00000-0000-4000-8000-000000000005', quantity: 2 },
  { productId: 'd3e00000-0000-4000-8000-00000000001b', combinationId: 'd3e0c000-0000-4000-8000-000000000019' }
]
const EXAMPLE_ADDRESS = { lineOne: '1 Ferry Building', lineTwo: 'Suite 42', city: 'San Francisco', state: 'CA', country: 'US', zipCode: '94111' }

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
  examples: [EXAMPLE_ADDRESS]
})
export type Address = Static<typeof Address>

export const OrderItemInput = Type.Object({
  productId: Uuid,
  combinationId: Type.Optional(Nullable(Uuid)),
  // No `default` keyword: generators make a property with a default required, and a missing
  // quantity is already read as 1.
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LINE_QUANTITY, description: 'A whole number from 1 to 100,000; default 1' }))
}, {
  $id: 'OrderItemInput',
  title: 'OrderItemInput',
  description: 'One order line: a product, with its combinationId when the product has combinations',
  examples: EXAMPLE_ITEMS
})

export const CreateOrderBody = Type.Object({
  customerName: Type.String({ minLength: 1, maxLength: 200, description: 'Must not be blank', examples: ['Ada Lovelace'] }),
  customerPhone: Type.String({ maxLength: 50, description: 'E.164 (`+14155550123`), or national with an ISO alpha-2 `address.country` or the store\'s default country', examples: ['+14155550123'] }),
  note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  items: Type.Array(ref(OrderItemInput), { minItems: 1, maxItems: MAX_ORDER_LINES }),
  address: Type.Optional(Nullable(ref(Address)))
}, {
  $id: 'CreateOrderRequest',
  title: 'CreateOrderRequest',
  description: 'Who the order is for, what it holds and, optionally, where it goes',
  examples: [{ customerName: 'Ada Lovelace', customerPhone: '+14155550123', note: 'Leave it with the concierge', items: EXAMPLE_ITEMS, address: EXAMPLE_ADDRESS }]
})
export type CreateOrderBody = Static<typeof CreateOrderBody>

export const OrderItem = Type.Object({
  productId: Uuid,
  combinationId: Nullable(Uuid),
  name: Type.String({ description: 'Product name, with the combination\'s option names: "T-shirt (Red / L)"; frozen at order time', examples: ['Barista T-shirt (Black / M)'] }),
  quantity: Type.Integer({ minimum: 1 }),
  singlePrice: { ...Money, description: 'sellPrice at the moment of creation' },
  totalPrice: { ...Money, description: 'singlePrice × quantity' }
}, { $id: 'OrderItem', title: 'OrderItem', additionalProperties: false })

const orderFields = {
  id: Uuid,
  orderNumber: Type.String({ description: 'Short, readable, increasing', examples: ['100042'] }),
  status: Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES], description: 'pending on creation; then changed by the store' }),
  total: { ...Money, description: 'Sum of the items\' totalPrice' },
  finalTotal: { ...Money, description: 'total plus the delivery fee when an address was given' },
  productsCount: Type.Integer({ description: 'Sum of item quantities' }),
  date: Type.String({ format: 'date-time', description: 'Creation time, ISO 8601 with offset' }),
  customerName: Type.String(),
  customerPhone: Nullable(Type.String({ description: 'E.164' })),
  note: Nullable(Type.String())
}

export const OrderSummary = Type.Object(orderFields, { $id: 'OrderSummary', title: 'OrderSummary', description: 'An order without its items (create and list answers)', additionalProperties: false })
export type OrderSummary = Static<typeof OrderSummary>

export const Order = Type.Object({ ...orderFields, items: Type.Array(ref(OrderItem)) }, { $id: 'Order', title: 'Order', description: 'An order with its items', additionalProperties: false })
export type Order = Static<typeof Order>

export const OrderPage = Page(ref(OrderSummary), 'OrderPage', 'A page of the calling key\'s orders, newest first')
export type OrderPage = Static<typeof OrderPage>

export const ListOrdersQuery = Type.Object({
  query: Type.Optional(Type.String({ maxLength: 200, description: 'An order number (exact or prefix), or a case-insensitive part of the customer\'s name or phone' })),
  page: Type.Optional(PageQuery)
})

export const OrderParams = Type.Object({
  orderNumberOrId: Type.String({ description: 'An order number or an order GUID' })
})

export const orderSchemas = [Address, OrderItemInput, CreateOrderBody, OrderItem, OrderSummary, Order, OrderPage]
