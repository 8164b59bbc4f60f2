// What every /external/v1 operation shares: the errors any of them can answer, the
// headers its responses carry, and the guards of the operations that take stock.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { apiError, invalidField, type ErrorCode } from '../../../errors.ts'
import { RATE_LIMIT_HEADERS, errorResponses, withHeaders, type ErrorExample, type ResponseHeader } from '../../../schemas/common.ts'
import { WriteDeadline } from '../../../services/write-deadline.ts'

// The last three come from the HTTP parser, before any route: headers too large, a request
// that is not valid HTTP, one not received in time.
const COMMON_ERRORS = ['validation_failed', 'invalid_api_key', 'insufficient_scope', 'rate_limit_exceeded', 'internal_error', 'service_unavailable',
  'malformed_request', 'request_timeout', 'request_header_too_large'] as const

// 409: the first request with that Idempotency-Key is still running; 429; 503 for
// maintenance and an unreachable database.
const RETRY_AFTER_STATUSES = new Set([409, 429, 503])

/**
 * The headers of an /external/v1 response with this status. The rate limiter counts every
 * request as it is admitted, so its headers are on every answer but a failure before the
 * count (the database unreachable while the key is checked).
 */
export function v1Headers (status: number): ResponseHeader[] {
  return [...RATE_LIMIT_HEADERS, ...(RETRY_AFTER_STATUSES.has(status) ? ['Retry-After' as const] : [])]
}

/** The documented error responses of an operation: its own codes plus those every operation can answer. */
export function v1Errors<C extends ErrorCode> (...codes: Array<C | ErrorExample<C>>) {
  return withHeaders(errorResponses<C | typeof COMMON_ERRORS[number]>(...codes, ...COMMON_ERRORS), v1Headers)
}

// Fastify's handler deadline, turned off (the longest a timer takes) for a route that keeps its
// own: an export's start, and every write, which must not answer 503 once its commit began
// (Fastify's would; in Fastify 5.12 it also ends as soon as a request's body has been read).
export const NO_DEADLINE_MS = 2_147_483_647

/** A write under its own deadline, `ms` from the request's arrival (services/write-deadline.ts). */
export function writeWithin<T> (reply: FastifyReply, ms: number, write: (deadline: WriteDeadline) => Promise<T>): Promise<T> {
  return WriteDeadline.within(ms - reply.elapsedTime, write)
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/

/** The request's Idempotency-Key, checked; undefined when it sends none. */
export function idempotencyKeyOf (request: FastifyRequest): string | undefined {
  const key = request.headers['idempotency-key']
  if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key))) {
    throw invalidField('header.idempotency-key', 'must be 1 to 255 visible ASCII characters')
  }
  return key
}

/**
 * Before an order or a hold reads its body: refused while the store is under maintenance,
 * and unless the body is JSON.
 */
export function stockWriteGuard (app: FastifyInstance) {
  return async (request: FastifyRequest): Promise<void> => {
    if (app.store.settings.maintenance) {
      throw apiError('store_under_maintenance', undefined, { headers: { 'retry-after': String(app.config.MAINTENANCE_RETRY_AFTER) } })
    }
    const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase()
    if (type !== 'application/json') throw apiError('unsupported_media_type')
  }
}
