// Every error code the API can answer, with its HTTP status: the one list integrators rely on.
export const ERROR_STATUS = {
  validation_failed: 400,
  invalid_json: 400,
  invalid_product_id: 400,
  customer_name_required: 400,
  items_required: 400,
  invalid_item: 400,
  invalid_quantity: 400,
  invalid_phone_number: 400,
  order_creation_failed: 400,
  invalid_api_key: 401,
  insufficient_scope: 403,
  not_found: 404,
  product_not_found: 404,
  order_not_found: 404,
  idempotency_key_in_use: 409,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  internal_error: 500,
  store_under_maintenance: 503,
  service_unavailable: 503
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface ErrorDetail { path: string, message: string }

/** An error the API answers as `{ error: code, message, requestId, details? }`. */
export class ApiError extends Error {
  readonly statusCode: number

  constructor (
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>
  ) {
    super(message)
    this.name = 'ApiError'
    this.statusCode = ERROR_STATUS[code]
  }
}

export function apiError (code: ErrorCode, message: string, extra: { details?: ErrorDetail[], headers?: Record<string, string> } = {}): ApiError {
  return new ApiError(code, message, extra.details, extra.headers)
}

/** The `code`s along an error's cause chain: drivers and Drizzle wrap the database's error. */
export function errorCodes (err: unknown): string[] {
  const codes: string[] = []
  for (let e = err as { code?: unknown, cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') codes.push(e.code)
  }
  return codes
}
