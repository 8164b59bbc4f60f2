// POST /orders, GET /orders, GET /orders/{orderNumberOrId}: an integrator's own orders; and
// POST /test/orders/{orderNumberOrId}/status, a test key moving its own test orders.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { apiError } from '../../../errors.ts'
import { PAGE_SIZE, conditionalResponses, documentedResponse, pageWindow, ref, withHeaders, type ResponseHeader } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { CreateOrderBody, ListOrdersQuery, Order, OrderPage, OrderParams, OrderSummary, TestOrderStatusBody } from '../../../schemas/orders.ts'
import { hours } from '../../../schemas/wording.ts'
import { openListCursor } from '../../../services/list-cursor.ts'
import { setTestOrderStatus } from '../../../services/order-status.ts'
import { getOrder, listOrders, orderFilters, type OrderFilters } from '../../../services/orders.ts'
import { placeOrder } from '../../../services/place-order.ts'
import { NO_DEADLINE_MS, idempotencyKeyOf, stockWriteGuard, v1Errors, v1Headers, writeWithin } from './shared.ts'

// Every orders response says Cache-Control: `private, no-cache` on a read that succeeded
// (set with its ETag), `no-store` on everything else.
const ordersHeaders = (status: number): ResponseHeader[] => [...v1Headers(status), 'Cache-Control']

const orders: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  // Orders are private to one integrator: never stored by a shared cache. On send, so a
  // refusal by the admission hook (401, 403, 429) carries it too.
  app.addHook('onSend', async (_request, reply) => { if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store') })

  const publicBase = config.PUBLIC_BASE_URL?.replace(/\/+$/, '')

  app.post('/orders', {
    config: { scope: 'orders:create' },
    schema: {
      operationId: 'createOrder',
      summary: 'Create an order',
      description: `Prices come from the catalogue (sellPrice at this moment) and stock is taken atomically: the order is created wholly or not at all.
Checks run in this order and the first failure answers: customer_name_required, items_required, invalid_item, invalid_quantity,
invalid_phone_number, validation_failed (other fields), then the reservation when \`reservationId\` is sent (reservation_not_found,
reservation_not_active, reservation_mismatch), then the catalogue (invalid_item for an unknown product, order_creation_failed
with one detail per line that cannot be ordered). With a reservation the order takes its held units: the stock check for them is the hold.
Send an Idempotency-Key to retry safely: the same key and body within ${hours(config.IDEMPOTENCY_TTL_HOURS)} replays the first response.
A 503 service_unavailable past the order's deadline means nothing was written; only a database lost while the order committed
can hide one that exists, so retry a 503 with the same Idempotency-Key.
With a test key (\`sk_test_…\`) the same checks run against the same stock, but the order takes no stock: it is a test order
(mode test, numbered T100001, T100002, …) that only that key sees.`,
      tags: ['Orders'],
      headers: Type.Object({
        'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: `Any unique string (a UUID is ideal); retries with the same key and body replay the first response for ${hours(config.IDEMPOTENCY_TTL_HOURS)}` }))
      }),
      body: ref(CreateOrderBody),
      response: {
        201: documentedResponse('Created. Replays of an Idempotency-Key answer the same, with Idempotent-Replayed: true', ref(OrderSummary), RESPONSE_EXAMPLES.createOrder, [...ordersHeaders(201), 'Location', 'Idempotent-Replayed']),
        ...withHeaders(v1Errors(
          'customer_name_required', 'items_required', 'invalid_item', 'invalid_quantity', 'invalid_phone_number', 'order_creation_failed', 'invalid_json',
          'reservation_mismatch', 'reservation_not_found', 'reservation_not_active',
          'idempotency_key_in_use', 'payload_too_large', 'unsupported_media_type', 'idempotency_key_reused', 'store_under_maintenance',
          { code: 'validation_failed', message: 'body.address.latitude: must be <= 90', details: [{ path: 'body.address.latitude', message: 'must be <= 90' }] }
        ), ordersHeaders)
      }
    },
    // The body is read by the order service, in the order of checks the contract fixes; the
    // schema above documents it.
    validatorCompiler: () => () => true,
    // Its deadline is ORDER_TIMEOUT_MS from the request's arrival, kept by the write itself.
    handlerTimeout: NO_DEADLINE_MS,
    preValidation: stockWriteGuard(app)
  }, async (request, reply) => {
    const idempotencyKey = idempotencyKeyOf(request)
    const base = publicBase ?? `${request.protocol}://${request.host}`
    const placed = await writeWithin(reply, config.ORDER_TIMEOUT_MS, (deadline) => placeOrder(app.stock, {
      apiKeyId: request.apiKey.id,
      mode: request.apiKey.mode,
      body: request.body,
      idempotencyKey,
      settings: app.store.settings,
      locationOf: (id) => `${base}/external/v1/orders/${id}`,
      deadline
    }))
    if (placed.replayed) {
      app.metrics.idempotentReplays.inc()
      reply.header('idempotent-replayed', 'true')
    } else {
      app.metrics.ordersCreated.inc()
    }
    return reply.code(201).header('location', placed.location).send(placed.order)
  })

  app.get('/orders', {
    config: { scope: 'orders:list', conditional: true },
    schema: {
      operationId: 'listOrders',
      summary: 'List your orders',
      description: `Only orders created with the calling API key, newest first, ${PAGE_SIZE} a page.`,
      tags: ['Orders'],
      querystring: ListOrdersQuery,
      response: {
        ...conditionalResponses(documentedResponse('A page of your orders, newest first', ref(OrderPage), RESPONSE_EXAMPLES.listOrders, ordersHeaders(200)), ordersHeaders(200)),
        ...withHeaders(v1Errors(), ordersHeaders)
      }
    }
  }, async (request) => {
    const { cursor, page, ...query } = request.query
    const apiKeyId = request.apiKey.id
    const secret = app.cursorSecret
    if (cursor === undefined) return listOrders(app.database, secret, apiKeyId, orderFilters(query), pageWindow(page))
    const resumed = openListCursor<OrderFilters>(secret, 'orders', cursor, { page, ...query }, apiKeyId)
    return listOrders(app.database, secret, apiKeyId, resumed.filters, resumed.window)
  })

  app.get('/orders/:orderNumberOrId', {
    config: { scope: 'orders:find', conditional: true },
    schema: {
      operationId: 'getOrder',
      summary: 'Get one of your orders',
      description: 'By order number or GUID. An order of another API key answers exactly like a missing one.',
      tags: ['Orders'],
      params: OrderParams,
      response: {
        ...conditionalResponses(documentedResponse('The order, with its items', ref(Order), RESPONSE_EXAMPLES.getOrder, ordersHeaders(200)), ordersHeaders(200)),
        ...withHeaders(v1Errors('order_not_found', {
          code: 'validation_failed',
          message: 'path: a segment is too long',
          details: [{ path: 'path', message: 'a segment is too long' }]
        }), ordersHeaders)
      }
    }
  }, async (request) => {
    const order = await getOrder(app.database, request.apiKey.id, request.params.orderNumberOrId)
    if (order === null) throw apiError('order_not_found')
    return order
  })

  app.post('/test/orders/:orderNumberOrId/status', {
    config: { scope: 'orders:create' },
    schema: {
      operationId: 'setTestOrderStatus',
      summary: 'Move one of your test orders (test keys only)',
      description: `Test mode only: a test key (\`sk_test_…\`) moves one of its own test orders to a new status, as the store moves live
orders: pending → confirmed | cancelled, confirmed → processing | cancelled, processing → shipped | cancelled, shipped → delivered.
It writes order.status_changed to your changes feed and webhooks, as a store's change does. A live key gets test_mode_only;
a live order can only be moved by the store.`,
      tags: ['Test mode'],
      params: OrderParams,
      body: ref(TestOrderStatusBody),
      response: {
        200: documentedResponse('The test order in its new status, with its items', ref(Order), RESPONSE_EXAMPLES.setTestOrderStatus, ordersHeaders(200)),
        ...withHeaders(v1Errors(
          'invalid_status_transition', 'test_mode_only', 'order_not_found', 'invalid_json', 'payload_too_large', 'unsupported_media_type',
          { code: 'validation_failed', message: 'body.status: must be equal to one of the allowed values', details: [{ path: 'body.status', message: 'must be equal to one of the allowed values' }] }
        ), ordersHeaders)
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => {
    return writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => setTestOrderStatus(app.database, request.apiKey, request.params.orderNumberOrId, request.body.status, deadline))
  })
}

export default orders
