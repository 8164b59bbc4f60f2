// POST /orders, GET /orders, GET /orders/{orderNumberOrId}: an integrator's own orders.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import {
  createOrder, deleteExpiredIdempotencyKeys, findIdempotentResponse, findOrderForKey, listOrdersForKey, requestHash,
  type IdempotencyInput, type StoredResponse
} from '../../../db/orders.ts'
import { bumpCatalogVersion } from '../../../db/settings.ts'
import { apiError } from '../../../errors.ts'
import { readOrderRequest } from '../../../lib/order-request.ts'
import { PAGE_SIZE, errorResponses, pageWindow, ref } from '../../../schemas/common.ts'
import { CreateOrderBody, ListOrdersQuery, Order, OrderPage, OrderParams, OrderSummary } from '../../../schemas/orders.ts'
import { commonErrors } from './shared.ts'

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/
const MAINTENANCE_RETRY_AFTER_SECONDS = '60'
const IDEMPOTENCY_CLEANUP_MS = 60 * 60 * 1000

// Only created orders are stored for replay, so a replay is always a 201.
function sendReplay (reply: FastifyReply, stored: StoredResponse) {
  reply.server.metrics.idempotentReplays.inc()
  return reply.code(201).header('location', stored.location).header('idempotent-replayed', 'true').send(stored.body)
}

const orders: FastifyPluginAsyncTypebox = async (app) => {
  // Orders are private to one integrator: never stored by a shared cache.
  app.addHook('onRequest', async (_request, reply) => { reply.header('cache-control', 'no-store') })

  const cleanup = setInterval(() => {
    deleteExpiredIdempotencyKeys(app.database.db).catch((err: unknown) => app.log.warn({ err }, 'idempotency cleanup failed'))
  }, IDEMPOTENCY_CLEANUP_MS).unref()
  app.addHook('onClose', async () => clearInterval(cleanup))

  const publicBase = app.config.PUBLIC_BASE_URL?.replace(/\/+$/, '')

  app.post('/orders', {
    config: { scope: 'orders:create' },
    schema: {
      operationId: 'createOrder',
      summary: 'Create an order',
      description: `Prices come from the catalogue (sellPrice at this moment) and stock is taken atomically: the order is created wholly or not at all.
Checks run in this order and the first failure answers: customer_name_required, items_required, invalid_item, invalid_quantity,
invalid_phone_number, validation_failed (other fields), then the catalogue (invalid_item for an unknown product, order_creation_failed).
Send an Idempotency-Key to retry safely: the same key and body within 24 hours replays the first response.`,
      tags: ['Orders'],
      headers: Type.Object({
        'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Any unique string (a UUID is ideal); retries with the same key and body replay the first response for 24 hours' }))
      }),
      body: ref(CreateOrderBody),
      response: {
        201: {
          ...ref(OrderSummary),
          description: 'Created. Replays of an Idempotency-Key answer the same, with Idempotent-Replayed: true',
          headers: {
            Location: { type: 'string', format: 'uri', description: 'The absolute URL of the new order' },
            'Idempotent-Replayed': { type: 'string', enum: ['true'], description: 'Present when this is a stored response replayed' }
          }
        },
        ...errorResponses(
          [400, 'customer_name_required, items_required, invalid_item, invalid_quantity, invalid_phone_number, order_creation_failed, validation_failed or invalid_json'],
          [409, 'A request with this Idempotency-Key is still running (idempotency_key_in_use)'],
          [413, 'Body over the size limit (payload_too_large)'],
          [415, 'Content-Type is not application/json (unsupported_media_type)'],
          [422, 'This Idempotency-Key was used with another body (idempotency_key_reused)']
        ),
        ...commonErrors,
        ...errorResponses([503, 'The store is under maintenance (store_under_maintenance, with Retry-After), or the database is unreachable (service_unavailable)'])
      }
    },
    // The body is read by readOrderRequest, in the order of checks the contract fixes; the
    // schema above documents it.
    validatorCompiler: () => () => true,
    // Longer than the transaction's own bounds (lock_timeout 5 s, statement_timeout 10 s), so
    // a 503 from this deadline means the database was unreachable, not that an order is slow.
    handlerTimeout: 30_000,
    preValidation: async (request) => {
      if (app.storeState.settings.maintenance) {
        throw apiError('store_under_maintenance', 'The store is under maintenance; retry later', { headers: { 'retry-after': MAINTENANCE_RETRY_AFTER_SECONDS } })
      }
      const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase()
      if (type !== 'application/json') throw apiError('unsupported_media_type', 'Send the body as application/json')
    }
  }, async (request, reply) => {
    const apiKeyId = request.apiKey!.id
    const header = request.headers['idempotency-key']
    let idempotency: IdempotencyInput | null = null
    if (header !== undefined) {
      if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
        throw apiError('validation_failed', 'Idempotency-Key must be 1 to 255 visible ASCII characters', { details: [{ path: 'header.idempotency-key', message: 'must be 1 to 255 visible ASCII characters' }] })
      }
      idempotency = { key: header, requestHash: requestHash(request.body) }
      // A stored response is answered before the body is checked again, as Stripe does.
      const previous = await findIdempotentResponse(app.database.db, apiKeyId, idempotency)
      if (previous.kind === 'mismatch') throw apiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different body')
      if (previous.kind === 'replay') {
        return sendReplay(reply, previous.response)
      }
    }

    const orderRequest = readOrderRequest(request.body, app.storeState.settings)
    const base = publicBase ?? `${request.protocol}://${request.host}`
    const result = await createOrder(app.database.db, {
      apiKeyId,
      request: orderRequest,
      deliveryFee: app.storeState.settings.deliveryFee,
      idempotency,
      locationOf: (order) => `${base}/external/v1/orders/${order.id}`
    })
    if ('mismatch' in result) throw apiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different body')
    if ('replay' in result) {
      return sendReplay(reply, result.replay)
    }
    app.metrics.ordersCreated.inc()
    if (result.catalogChanged) {
      // Stock changed: drop this instance's cached reads now; other instances follow at their next poll.
      app.storeState.noteCatalogChange(await bumpCatalogVersion(app.database.db))
    }
    return reply.code(201).header('location', `${base}/external/v1/orders/${result.order.id}`).send(result.order)
  })

  app.get('/orders', {
    config: { scope: 'orders:list' },
    schema: {
      operationId: 'listOrders',
      summary: 'List your orders',
      description: 'Only orders created with the calling API key, newest first, 25 a page.',
      tags: ['Orders'],
      querystring: ListOrdersQuery,
      response: { 200: ref(OrderPage), ...errorResponses([400, 'Invalid query (validation_failed)']), ...commonErrors }
    }
  }, async (request) => {
    const window = pageWindow(request.query.page)
    const query = request.query.query?.trim() || undefined
    const { items, total } = await listOrdersForKey(app.database.db, request.apiKey!.id, query, window)
    return { items, page: window.page, pageSize: PAGE_SIZE, total }
  })

  app.get('/orders/:orderNumberOrId', {
    config: { scope: 'orders:find' },
    schema: {
      operationId: 'getOrder',
      summary: 'Get one of your orders',
      description: 'By order number or GUID. An order of another API key answers exactly like a missing one.',
      tags: ['Orders'],
      params: OrderParams,
      response: { 200: ref(Order), ...errorResponses([404, 'No order of yours matches (order_not_found)']), ...commonErrors }
    }
  }, async (request) => {
    const order = await findOrderForKey(app.database.db, request.apiKey!.id, request.params.orderNumberOrId)
    if (order === null) throw apiError('order_not_found', 'No order of yours matches that number or id')
    return order
  })
}

export default orders
