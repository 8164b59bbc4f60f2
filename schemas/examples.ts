// The OpenAPI document's examples, in one place: the requests a partner can send as they are
// to a demo store (services/demo-catalog.ts), and what it answers them. They hang together (the
// parameter examples find the products and the order the response examples show, the
// create-order example makes that order), so they live side by side; test/routes/docs.test.ts
// sends every one to a demo store and compares the answers.
import type { ResponseExample } from './common.ts'

/** The id of the endpoint the webhook examples show. */
export const WEBHOOK_EXAMPLE_ID = '5e1f0c2a-8b3d-4c7e-9a10-6f2b4d8e1c35'
export const WEBHOOK_URL_EXAMPLE = 'https://hooks.example.com/storefront'
export const WEBHOOK_SECRET_EXAMPLE = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2cUx3OM5xZc='

// ---- Requests

// Both lines are of stock that is not tracked, so the example works as often as it is sent:
// Espresso Blend 1 kg, and the made-to-order Roaster Hoodie in XL, without a quantity.
const ORDER_LINES = [
  { productId: 'd3e00000-0000-4000-8000-000000000005', quantity: 2 },
  { productId: 'd3e00000-0000-4000-8000-00000000001b', combinationId: 'd3e0c000-0000-4000-8000-000000000019' }
]
const ORDER_ADDRESS = { lineOne: '1 Ferry Building', lineTwo: 'Suite 42', city: 'San Francisco', state: 'CA', country: 'US', zipCode: '94111' }

/** The body of create-order: order 100001 for Ada Lovelace in a fresh demo store. */
export const CREATE_ORDER_EXAMPLE = {
  customerName: 'Ada Lovelace',
  customerPhone: '+14155550123',
  note: 'Leave it with the concierge',
  items: ORDER_LINES,
  address: ORDER_ADDRESS
}

// Two bags of Colombia Huila 250 g, of tracked stock (35 in a fresh demo store) that no other
// example shows, held for 15 minutes.
const RESERVATION_LINES = [{ productId: 'd3e00000-0000-4000-8000-000000000002', quantity: 2 }]

/** The body of create-reservation: hold two bags while the shopper pays. */
export const CREATE_RESERVATION_EXAMPLE = { items: RESERVATION_LINES, ttlSeconds: 900 }

/** The id of the reservation the examples show (a store makes its own). */
export const RESERVATION_EXAMPLE_ID = '3b9d6c1e-2f4a-4d8b-8e57-0a1c2e3f4b5d'

/**
 * Parameters have no schema of their own to carry examples (theirs are shared with
 * validation), so the document gets them by operation (plugins/openapi.ts): together the list
 * parameters find one product, and the order ones the order the create example makes.
 */
export const PARAMETER_EXAMPLES: Record<string, Record<string, string | number>> = {
  listProducts: {
    query: 'yirgacheffe',
    page: 1,
    isAvailable: 'true',
    categoryIds: 'ca7e6000-0000-4000-8000-000000000001,ca7e6000-0000-4000-8000-000000000002',
    brandIds: 'b7a4d000-0000-4000-8000-000000000001',
    barcode: '4006381000017',
    sku: 'COF-ETH-250',
    updatedSince: '2026-01-01T00:00:00Z'
  },
  getProduct: { id: 'd3e00000-0000-4000-8000-000000000020' },
  exportProducts: {
    query: 'yirgacheffe',
    isAvailable: 'true',
    categoryIds: 'ca7e6000-0000-4000-8000-000000000001,ca7e6000-0000-4000-8000-000000000002',
    brandIds: 'b7a4d000-0000-4000-8000-000000000001',
    barcode: '4006381000017',
    sku: 'COF-ETH-250',
    updatedSince: '2026-01-01T00:00:00Z'
  },
  listCategories: { page: 1 },
  listBrands: { page: 1 },
  listOrders: { query: 'Ada', page: 1, updatedSince: '2026-01-01T00:00:00Z' },
  getOrder: { orderNumberOrId: '100001' },
  exportOrders: { query: 'Ada', updatedSince: '2026-01-01T00:00:00Z' },
  // A test key's first order, as the create example makes it with that key.
  setTestOrderStatus: { orderNumberOrId: 'T100001' },
  listChanges: { after: 'evt_0', limit: 100 },
  // The endpoint the create example makes, as the webhook answers below show it.
  getWebhook: { id: WEBHOOK_EXAMPLE_ID },
  updateWebhook: { id: WEBHOOK_EXAMPLE_ID },
  deleteWebhook: { id: WEBHOOK_EXAMPLE_ID },
  rotateWebhookSecret: { id: WEBHOOK_EXAMPLE_ID },
  listWebhookDeliveries: { id: WEBHOOK_EXAMPLE_ID, page: 1 },
  redeliverWebhook: { id: WEBHOOK_EXAMPLE_ID, eventId: 'evt_1042' },
  // The reservation the create example makes, as the answers below show it.
  getReservation: { id: RESERVATION_EXAMPLE_ID },
  releaseReservation: { id: RESERVATION_EXAMPLE_ID }
}

// ---- Answers

const TUMBLER = {
  id: 'd3e00000-0000-4000-8000-000000000020',
  name: 'Travel Tumbler 470 ml',
  sku: 'ACC-TMB-470',
  barcode: null,
  quantity: 25,
  price: 27.5,
  sellPrice: 27.5,
  isAvailable: true,
  productImageUrl: 'https://cdn.example.com/demo/travel-tumbler-470-ml.jpg',
  categoryIds: ['ca7e6000-0000-4000-8000-000000000005'],
  brandId: 'b7a4d000-0000-4000-8000-000000000003',
  variants: [{
    id: 'd3e0a000-0000-4000-8000-000000000008',
    name: 'Color',
    options: [{ id: 'd3e0b000-0000-4000-8000-000000000016', name: 'Steel' }, { id: 'd3e0b000-0000-4000-8000-000000000017', name: 'Matte Black' }]
  }],
  combinations: [
    { id: 'd3e0c000-0000-4000-8000-00000000001c', optionIds: ['d3e0b000-0000-4000-8000-000000000016'], sku: 'ACC-TMB-470-STE', barcode: '4006381000543', quantity: 16, price: 27.5, sellPrice: 27.5, isAvailable: true, imageUrl: null },
    { id: 'd3e0c000-0000-4000-8000-00000000001d', optionIds: ['d3e0b000-0000-4000-8000-000000000017'], sku: 'ACC-TMB-470-MAT', barcode: '4006381000550', quantity: 9, price: 29.99, sellPrice: 29.99, isAvailable: true, imageUrl: null }
  ],
  updatedAt: '2026-11-23T09:30:00.000Z'
}
const YIRGACHEFFE_PAGE = {
  items: [{
    id: 'd3e00000-0000-4000-8000-000000000001',
    name: 'Ethiopia Yirgacheffe 250 g',
    sku: 'COF-ETH-250',
    barcode: '4006381000017',
    quantity: 40,
    price: 12.5,
    sellPrice: 12.5,
    isAvailable: true,
    productImageUrl: 'https://cdn.example.com/demo/ethiopia-yirgacheffe-250-g.jpg',
    categoryIds: ['ca7e6000-0000-4000-8000-000000000001'],
    brandId: 'b7a4d000-0000-4000-8000-000000000001',
    variants: [],
    combinations: [],
    updatedAt: '2026-11-23T09:30:00.000Z'
  }],
  page: 1,
  pageSize: 25,
  total: 1,
  nextCursor: null
}

const CATEGORIES = {
  items: [
    { id: 'ca7e6000-0000-4000-8000-000000000005', name: 'Accessories', productCount: 8 },
    { id: 'ca7e6000-0000-4000-8000-000000000004', name: 'Apparel', productCount: 5 },
    { id: 'ca7e6000-0000-4000-8000-000000000003', name: 'Brewing equipment', productCount: 9 },
    { id: 'ca7e6000-0000-4000-8000-000000000001', name: 'Coffee', productCount: 11 },
    { id: 'ca7e6000-0000-4000-8000-000000000002', name: 'Tea', productCount: 9 }
  ],
  page: 1,
  pageSize: 25,
  total: 5,
  nextCursor: null
}
const BRANDS = {
  items: [
    { id: 'b7a4d000-0000-4000-8000-000000000003', name: 'Brewline', productCount: 12 },
    { id: 'b7a4d000-0000-4000-8000-000000000002', name: 'Kettle & Leaf', productCount: 8 },
    { id: 'b7a4d000-0000-4000-8000-000000000001', name: 'Northwind Roasters', productCount: 15 }
  ],
  page: 1,
  pageSize: 25,
  total: 3,
  nextCursor: null
}

// The order CREATE_ORDER_EXAMPLE places in a fresh demo store (no delivery fee is set there).
const ORDER_SUMMARY = {
  id: '7d1c0b2e-4f3a-4e8b-9a61-2c5d8e0f4b17',
  orderNumber: '100001',
  mode: 'live',
  status: 'pending',
  total: 96.98,
  deliveryFee: 0,
  finalTotal: 96.98,
  productsCount: 3,
  date: '2026-11-23T09:41:07.512Z',
  customerName: CREATE_ORDER_EXAMPLE.customerName,
  customerPhone: CREATE_ORDER_EXAMPLE.customerPhone,
  note: CREATE_ORDER_EXAMPLE.note,
  address: { ...ORDER_ADDRESS, phone: CREATE_ORDER_EXAMPLE.customerPhone, latitude: null, longitude: null },
  updatedAt: '2026-11-23T09:41:07.512Z'
}
const ORDER = {
  ...ORDER_SUMMARY,
  items: [
    { productId: 'd3e00000-0000-4000-8000-000000000005', combinationId: null, name: 'Espresso Blend 1 kg', quantity: 2, singlePrice: 23.99, totalPrice: 47.98 },
    { productId: 'd3e00000-0000-4000-8000-00000000001b', combinationId: 'd3e0c000-0000-4000-8000-000000000019', name: 'Roaster Hoodie (XL)', quantity: 1, singlePrice: 49, totalPrice: 49 }
  ]
}

const FEED = {
  items: [
    { id: 'evt_1041', type: 'product.updated', resourceId: 'd3e00000-0000-4000-8000-000000000005', occurredAt: '2026-11-23T09:41:07.512Z', data: {} },
    {
      id: 'evt_1042',
      type: 'order.status_changed',
      resourceId: ORDER_SUMMARY.id,
      occurredAt: '2026-11-23T10:02:44.101Z',
      data: { orderNumber: '100001', status: 'confirmed', previousStatus: 'pending' }
    }
  ],
  nextCursor: 'evt_1042',
  hasMore: false
}

const ENDPOINT = {
  id: WEBHOOK_EXAMPLE_ID,
  url: WEBHOOK_URL_EXAMPLE,
  events: ['order.*'],
  description: 'Order sync',
  status: 'enabled',
  disabledReason: null,
  createdAt: '2026-11-23T09:41:07.512Z'
}
const DELIVERIES = {
  items: [
    { eventId: 'evt_1042', type: 'order.status_changed', status: 'pending', attempts: 2, lastAttemptAt: '2026-11-23T10:07:45.020Z', lastResponseStatus: 503, nextAttemptAt: '2026-11-23T10:37:45.020Z' },
    { eventId: 'evt_1040', type: 'order.created', status: 'succeeded', attempts: 1, lastAttemptAt: '2026-11-23T09:41:07.930Z', lastResponseStatus: 200, nextAttemptAt: null }
  ],
  page: 1,
  pageSize: 25,
  total: 2,
  nextCursor: null
}

const RESERVATION = {
  id: RESERVATION_EXAMPLE_ID,
  status: 'active',
  items: [{ ...RESERVATION_LINES[0]!, combinationId: null }],
  expiresAt: '2026-11-23T09:56:07.512Z',
  createdAt: '2026-11-23T09:41:07.512Z',
  orderId: null
}

/** The named examples of each operation's success answer, by operationId. */
export const RESPONSE_EXAMPLES = {
  listProducts: { yirgacheffe: { summary: 'Every filter at once, as the parameter examples send them', value: YIRGACHEFFE_PAGE } },
  getProduct: { tumbler: { summary: 'A product with combinations', value: TUMBLER } },
  // An export's examples are its lines, in order.
  exportProducts: {
    product: { summary: 'A product line (every filter at once, as the parameter examples send them, find one)', value: YIRGACHEFFE_PAGE.items[0] },
    end: { summary: 'The last line', value: { exportEnd: { count: 1, changesCursor: 'evt_1042' } } }
  },
  listCategories: { demo: { summary: 'The demo store\'s categories', value: CATEGORIES } },
  listBrands: { demo: { summary: 'The demo store\'s brands', value: BRANDS } },
  createOrder: { created: { summary: 'The order the request example creates in a fresh demo store', value: ORDER_SUMMARY } },
  listOrders: { ada: { summary: 'Your orders for Ada, as the parameter examples ask', value: { items: [ORDER_SUMMARY], page: 1, pageSize: 25, total: 1, nextCursor: null } } },
  getOrder: { byNumber: { summary: 'Order 100001, as the parameter example asks', value: ORDER } },
  exportOrders: {
    order: { summary: 'An order line: your orders for Ada, as the parameter examples ask', value: ORDER },
    end: { summary: 'The last line', value: { exportEnd: { count: 1, changesCursor: 'evt_1042' } } }
  },
  setTestOrderStatus: { confirmed: { summary: 'A test key\'s order T100001, confirmed', value: { ...ORDER, orderNumber: 'T100001', mode: 'test', status: 'confirmed' } } },
  listChanges: { events: { summary: 'A product changed, then an order was confirmed', value: FEED } },
  createWebhook: { created: { summary: 'An endpoint for order events', value: { ...ENDPOINT, secret: WEBHOOK_SECRET_EXAMPLE } } },
  listWebhooks: { one: { summary: 'One endpoint', value: { items: [ENDPOINT] } } },
  getWebhook: { endpoint: { summary: 'An enabled endpoint', value: ENDPOINT } },
  updateWebhook: { enabled: { summary: 'Enabled again', value: ENDPOINT } },
  rotateWebhookSecret: { rotated: { summary: 'A new secret', value: { ...ENDPOINT, secret: WEBHOOK_SECRET_EXAMPLE } } },
  listWebhookDeliveries: { deliveries: { summary: 'One being retried, one delivered', value: DELIVERIES } },
  createReservation: { held: { summary: 'Two bags held for 15 minutes', value: RESERVATION } },
  getReservation: { active: { summary: 'The hold the create example makes, still active', value: RESERVATION } }
} satisfies Record<string, Record<string, ResponseExample>>
