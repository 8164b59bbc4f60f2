// Every error code the API can answer, with its HTTP status and default message: the one
// list integrators rely on. The error handler, the OpenAPI document and the routes' error
// lists all read it.
export const ERRORS = {
  validation_failed: { status: 400, message: 'The request does not match the schema' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON' },
  invalid_product_id: { status: 400, message: 'The product id must be a GUID' },
  customer_name_required: { status: 400, message: 'customerName is required and must not be blank' },
  items_required: { status: 400, message: 'items must be a non-empty array' },
  invalid_item: { status: 400, message: 'An item\'s productId is not a product GUID' },
  invalid_quantity: { status: 400, message: 'An item\'s quantity must be a whole number from 1 to 100,000' },
  invalid_phone_number: { status: 400, message: 'The delivery phone is not a valid phone number' },
  order_creation_failed: { status: 400, message: 'The order could not be created' },
  reservation_failed: { status: 400, message: 'The stock could not be held' },
  reservation_mismatch: { status: 400, message: 'The order\'s lines do not match the reservation\'s products, combinations and quantities' },
  reservation_limit_reached: { status: 400, message: 'This API key has the most active reservations it may have (100); release or use one first' },
  invalid_status_transition: { status: 400, message: 'The order cannot go from its status to that one' },
  invalid_webhook_url: { status: 400, message: 'The webhook URL is not one the service may deliver to' },
  webhook_limit_reached: { status: 400, message: 'This API key has the most webhook endpoints it may have (10); delete one first' },
  invalid_cursor: { status: 400, message: 'The cursor was not issued by this service or was altered' },
  malformed_request: { status: 400, message: 'The request line or a header is not valid HTTP; the connection is closed' },
  invalid_api_key: { status: 401, message: 'The API key is not valid' },
  insufficient_scope: { status: 403, message: 'This API key lacks the scope of this operation' },
  test_mode_only: { status: 403, message: 'Only a test key may do this; a live order is moved by the store' },
  not_found: { status: 404, message: 'No such resource' },
  product_not_found: { status: 404, message: 'No product has that id' },
  order_not_found: { status: 404, message: 'No order of yours matches that number or id' },
  webhook_not_found: { status: 404, message: 'No webhook endpoint of yours has that id' },
  reservation_not_found: { status: 404, message: 'No reservation of yours has that id' },
  request_timeout: { status: 408, message: 'The request was not received in time; the connection is closed' },
  idempotency_key_in_use: { status: 409, message: 'A request with this Idempotency-Key is still running; retry shortly' },
  reservation_not_active: { status: 409, message: 'The reservation is no longer active (consumed, released or expired)' },
  cursor_expired: { status: 410, message: 'The cursor is older than the changes the service keeps; read the lists again from the start, then follow the feed' },
  payload_too_large: { status: 413, message: 'The request body is larger than the limit' },
  unsupported_media_type: { status: 415, message: 'Send the body as application/json' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was already used with a different body' },
  rate_limit_exceeded: { status: 429, message: 'Rate limit exceeded; retry later' },
  request_header_too_large: { status: 431, message: 'The request headers are larger than the service accepts; the connection is closed' },
  internal_error: { status: 500, message: 'Something went wrong on our side; quote the requestId to support' },
  store_under_maintenance: { status: 503, message: 'The store is under maintenance; retry later' },
  service_unavailable: { status: 503, message: 'The service cannot reach its database; retry shortly' }
} as const satisfies Record<string, { status: number, message: string }>

export type ErrorCode = keyof typeof ERRORS
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[]

/** Why an order line cannot be ordered (in `order_creation_failed` details). */
export const LINE_FAILURE_REASONS = ['out_of_stock', 'unavailable', 'combination_required', 'combination_mismatch'] as const
export type LineFailureReason = typeof LINE_FAILURE_REASONS[number]

export interface ErrorDetail {
  path: string
  message: string
  /** Only on order_creation_failed and reservation_failed: what a program can act on. */
  reason?: LineFailureReason
  /** Only with reason out_of_stock: the units left. */
  available?: number
}

/** An error the API answers as `{ error: code, message, requestId, details? }`. */
export class ApiError extends Error {
  readonly statusCode: number

  constructor (
    readonly code: ErrorCode,
    message: string = ERRORS[code].message,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>
  ) {
    super(message)
    this.name = 'ApiError'
    this.statusCode = ERRORS[code].status
  }
}

export function apiError (code: ErrorCode, message?: string, extra: { details?: ErrorDetail[], headers?: Record<string, string> } = {}): ApiError {
  return new ApiError(code, message, extra.details, extra.headers)
}

/** validation_failed naming the offending field, as every schema failure does. */
export function invalidField (path: string, problem: string): ApiError {
  const field = clipPath(path)
  return apiError('validation_failed', `${field}: ${problem}`, { details: [{ path: field, message: problem }] })
}

/** A field's path as error details show it: at most 500 characters (a query may name any parameter). */
export function clipPath (path: string): string {
  return path.length > 500 ? `${path.slice(0, 499)}…` : path
}
