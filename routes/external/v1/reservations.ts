// POST /reservations, GET and DELETE /reservations/{id}: an integrator holds stock while its
// shopper pays, then creates the order with the reservation's id (or releases it).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { documentedResponse, ref, withHeaders } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { CreateReservationBody, MAX_ACTIVE_RESERVATIONS, RESERVATION_TTL, Reservation, ReservationParams } from '../../../schemas/reservations.ts'
import { hours } from '../../../schemas/wording.ts'
import { getReservation, holdStock, releaseReservation } from '../../../services/reservations.ts'
import { NO_DEADLINE_MS, idempotencyKeyOf, stockWriteGuard, v1Errors, v1Headers, writeWithin } from './shared.ts'

const TAGS = ['Reservations']
// Holding stock is part of ordering: the same scope.
const SCOPE = { scope: 'orders:create' } as const
const NOT_ACTIVE_EXAMPLE = { code: 'reservation_not_active' as const, message: 'The reservation is consumed by an order' }

const reservations: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  // A hold is private to one integrator and changes: never stored by a shared cache.
  app.addHook('onSend', async (_request, reply) => { if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store') })
  const publicBase = config.PUBLIC_BASE_URL?.replace(/\/+$/, '')
  const headers = (status: number) => [...v1Headers(status), 'Cache-Control' as const]

  app.post('/reservations', {
    config: SCOPE,
    schema: {
      operationId: 'createReservation',
      summary: 'Hold stock while your shopper checks out',
      description: `Takes the lines' units from the stock everyone sees (product and combination quantity, isAvailable, other orders and
reservations) for ttlSeconds (${RESERVATION_TTL.min}–${RESERVATION_TTL.max}, default ${RESERVATION_TTL.default}), then gives them back unless an order consumes them:
create the order with this reservation's id as \`reservationId\` once your shopper has paid, or DELETE it when the shopper abandons.
The lines are checked as an order's (items_required, invalid_item, invalid_quantity, then the catalogue); a line that cannot be held
answers reservation_failed with one detail per line (reason, and available for out_of_stock). Stock that is not tracked holds nothing.
At most ${MAX_ACTIVE_RESERVATIONS} active reservations per key. An Idempotency-Key works as for orders (replays for ${hours(config.IDEMPOTENCY_TTL_HOURS)}).
A test key's reservation runs every check against the real stock and holds nothing.`,
      tags: TAGS,
      headers: Type.Object({
        'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Any unique string (a UUID is ideal); retries with the same key and body replay the first response' }))
      }),
      body: ref(CreateReservationBody),
      response: {
        201: documentedResponse('Held. Replays of an Idempotency-Key answer the same, with Idempotent-Replayed: true', ref(Reservation), RESPONSE_EXAMPLES.createReservation,
          [...headers(201), 'Location', 'Idempotent-Replayed']),
        ...withHeaders(v1Errors('items_required', 'invalid_item', 'invalid_quantity', 'reservation_failed', 'reservation_limit_reached', 'invalid_json',
          'idempotency_key_in_use', 'payload_too_large', 'unsupported_media_type', 'idempotency_key_reused', 'store_under_maintenance',
          { code: 'validation_failed', message: 'body.ttlSeconds: must be <= 3600', details: [{ path: 'body.ttlSeconds', message: 'must be <= 3600' }] }), headers)
      }
    },
    // The body is read by the service, with an order's item checks in their order; the schema above documents it.
    validatorCompiler: () => () => true,
    // As create-order's: ORDER_TIMEOUT_MS from the request's arrival, kept by the write itself.
    handlerTimeout: NO_DEADLINE_MS,
    preValidation: stockWriteGuard(app)
  }, async (request, reply) => {
    const idempotencyKey = idempotencyKeyOf(request)
    const base = publicBase ?? `${request.protocol}://${request.host}`
    const hold = await writeWithin(reply, config.ORDER_TIMEOUT_MS, (deadline) => holdStock(app.stock, {
      apiKeyId: request.apiKey.id,
      mode: request.apiKey.mode,
      body: request.body,
      idempotencyKey,
      locationOf: (id) => `${base}/external/v1/reservations/${id}`,
      deadline
    }))
    if (hold.replayed) reply.header('idempotent-replayed', 'true')
    else app.metrics.reservationsCreated.inc()
    return reply.code(201).header('location', hold.location).send(hold.reservation)
  })

  app.get('/reservations/:id', {
    config: SCOPE,
    schema: {
      operationId: 'getReservation',
      summary: 'Get one of your reservations',
      description: 'Its status: active, consumed (with orderId), released or expired. Another key\'s reservation answers like a missing one.',
      tags: TAGS,
      params: ReservationParams,
      response: {
        200: documentedResponse('The reservation', ref(Reservation), RESPONSE_EXAMPLES.getReservation, headers(200)),
        ...withHeaders(v1Errors('reservation_not_found', { code: 'validation_failed', message: 'params.id: must match format "uuid"', details: [{ path: 'params.id', message: 'must match format "uuid"' }] }), headers)
      }
    }
  }, async (request) => getReservation(app.stock, request.apiKey.id, request.params.id))

  app.delete('/reservations/:id', {
    config: SCOPE,
    schema: {
      operationId: 'releaseReservation',
      summary: 'Release a reservation',
      description: 'Gives the held units back at once (your shopper abandoned the checkout). A reservation no longer active answers reservation_not_active.',
      tags: TAGS,
      params: ReservationParams,
      response: {
        204: { description: 'Released; no body', type: 'null', headers: documentedResponse('', ref(Reservation), {}, headers(204)).headers },
        ...withHeaders(v1Errors('reservation_not_found', NOT_ACTIVE_EXAMPLE, { code: 'validation_failed', message: 'params.id: must match format "uuid"', details: [{ path: 'params.id', message: 'must match format "uuid"' }] }), headers)
      }
    },
    // A stock write: it waits for the same locks as an order, so it has an order's deadline.
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => {
    await writeWithin(reply, config.ORDER_TIMEOUT_MS, (deadline) => releaseReservation(app.stock, request.apiKey.id, request.params.id, deadline))
    app.metrics.reservationsEnded.inc({ how: 'released' })
    return reply.code(204).send(null)
  })
}

export default reservations
