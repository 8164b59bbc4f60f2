// Wire shapes shared by every resource: ids, money, the page envelope, the error body.
import { Type, type Static, type TSchema } from 'typebox'
import { ERROR_CODES, ERRORS, LINE_FAILURE_REASONS, type ErrorCode, type ErrorDetail as ErrorDetailValue, type LineFailureReason } from '../errors.ts'

/** A reference to a shared schema registered with `addSchema`; typed as the schema it names. */
export function ref<T extends TSchema & { $id?: string }> (schema: T) {
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id!}#` })
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const uuidRegex = new RegExp(UUID_PATTERN)
export const isUuid = (value: unknown): value is string => typeof value === 'string' && uuidRegex.test(value)

export const Uuid = Type.String({ format: 'uuid', pattern: UUID_PATTERN, maxLength: 36, examples: ['c0ffee00-0000-4000-8000-000000000001'] })
export const Money = Type.Number({ description: 'Amount with at most two decimals', minimum: 0, maximum: 9999999999.99, examples: [19.99] })
/** An instant as the API writes it: ISO 8601 in UTC with milliseconds. */
export const Timestamp = (description: string) => Type.String({ format: 'date-time', maxLength: 30, description, examples: ['2026-11-23T09:30:00.000Z'] })
/** Free text of at most `maxLength` characters. */
export const Text = (maxLength: number, options: Record<string, unknown> = {}) => Type.String({ maxLength, ...options })
/** A count of records or units: a whole number JavaScript holds exactly. */
export const Count = (description: string) => Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description })
/** Lengths the catalogue and the API hold to, so every string the API answers has a bound. */
export const LIMITS = { name: 500, optionName: 100, groupName: 200, code: 200, url: 2048, variants: 10, options: 100, combinations: 2000, categories: 100 } as const
/**
 * The schema or null. A plain type becomes a type list (`["string", "null"]`), so a bad value
 * fails once, on the value; a reference needs a union.
 */
export function Nullable<T extends TSchema> (schema: T) {
  const type = (schema as { type?: unknown }).type
  return typeof type === 'string'
    ? Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] })
    : Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]))
}

/** The request id the documentation's examples show: what the service generates (a UUID). */
const EXAMPLE_REQUEST_ID = '3f2a7c1e-5b8d-4e09-9c6a-0d4b7e1f2a93'

export const ErrorDetail = Type.Object({
  path: Type.String({ maxLength: 500, description: 'The offending field or order line', examples: ['query.page', 'items[2]'] }),
  message: Type.String({ maxLength: 2000, examples: ['must be an integer'] }),
  reason: Type.Optional(Type.Unsafe<LineFailureReason>({
    type: 'string',
    enum: [...LINE_FAILURE_REASONS],
    description: 'On order_creation_failed: why this line cannot be ordered'
  })),
  available: Type.Optional(Type.Integer({ format: 'int32', minimum: 0, maximum: 2147483647, description: 'With reason out_of_stock: the units left' }))
}, { additionalProperties: false })

export const ErrorBody = Type.Object({
  error: Type.Unsafe<ErrorCode>({ type: 'string', enum: ERROR_CODES, description: 'Machine-readable error code: one of a closed list', examples: ['product_not_found'] }),
  message: Type.String({ maxLength: 2000, description: 'Human-readable explanation', examples: [ERRORS.product_not_found.message] }),
  requestId: Type.String({ maxLength: 128, description: 'Echoed in the Request-Id header; quote it to support', examples: [EXAMPLE_REQUEST_ID] }),
  details: Type.Optional(Type.Array(ErrorDetail, { maxItems: 500, description: 'On validation errors, the offending fields; on order_creation_failed, the lines that cannot be ordered' }))
}, { $id: 'Error', title: 'Error', additionalProperties: false })
export type ErrorBody = Static<typeof ErrorBody>

export const PAGE_SIZE = 25
export const CURSOR_MAX_LENGTH = 1000

/** The largest page number: PostgreSQL's integer, so no page is too large to compute. */
export const MAX_PAGE = 2_147_483_647

/** Where a record is in its list's sort order: its sort value and its id. */
export type SortKey = [string, string]

/** The records a page answers: by page number (an offset), or those after a sort key (a cursor). */
export interface ListWindow {
  page: number
  limit: number
  offset: number
  after: SortKey | null
}

/** The page a list answers (values below 1 are page 1) and the rows it covers. */
export function pageWindow (requested: number | undefined): ListWindow {
  const page = Math.max(1, requested ?? 1)
  return { page, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE, after: null }
}

export function Page<T extends TSchema> (item: T, id: string, description: string) {
  return Type.Object({
    items: Type.Array(item, { maxItems: PAGE_SIZE }),
    page: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_PAGE, description: 'Current page, one-based' }),
    pageSize: Type.Integer({ format: 'int32', minimum: PAGE_SIZE, maximum: PAGE_SIZE, description: `Always ${PAGE_SIZE}`, examples: [PAGE_SIZE] }),
    total: Count('Total matching records'),
    nextCursor: Nullable(Type.String({
      maxLength: CURSOR_MAX_LENGTH,
      description: 'Send it as `cursor` (and nothing else) for the next page, null when no record follows this one. Following cursors to the end returns every record that matched and did not change meanwhile exactly once',
      examples: [null]
    }))
  }, { $id: id, title: id, description, additionalProperties: false })
}

// Bounded below too: a coerced `-Infinity` passes Ajv's integer check, never its minimum.
export const PageQuery = Type.Integer({
  // No schema default: a cursor must be sent alone, so the handler needs to see whether page was.
  description: 'One-based page number (1 when absent); values below 1 are treated as 1',
  format: 'int32',
  minimum: -MAX_PAGE - 1,
  maximum: MAX_PAGE
})

/** `cursor`: the nextCursor of a page envelope; with it, no other list parameter. */
export const CursorQuery = Type.String({
  minLength: 1,
  maxLength: CURSOR_MAX_LENGTH,
  description: `The nextCursor of the previous page: the next ${PAGE_SIZE} records, in the same order and with the same filters. Send no other list parameter with it`
})

/** `updatedSince`: an instant with its offset, within the years every timestamp is held to. */
export const UpdatedSinceQuery = Type.String({
  format: 'date-time',
  maxLength: 40,
  description: 'Only records whose updatedAt is at or after this instant: ISO 8601 with an offset (`Z` or `+hh:mm`), from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z'
})

/**
 * Marks a query parameter that takes a list. Clients send lists either way, so the
 * parameter repeated (`a=1&a=2`) means its comma-separated form (`a=1,2`); the validator joins
 * the repeats before the length limit applies. In the document it tells readers the same.
 */
export const LIST_KEYWORD = 'x-list'

/** A list query parameter: comma-separated values, or the parameter repeated. */
export function ListQuery (name: string, maxLength: number, description: string) {
  return Type.String({
    maxLength,
    description: `${description}. Separate values with commas, or repeat the parameter (\`${name}=A&${name}=B\` is \`${name}=A,B\`); at most ${maxLength.toLocaleString('en')} characters joined`,
    [LIST_KEYWORD]: true
  })
}

// ---- What the documentation says of responses: headers, examples, the error responses.

interface HeaderDefinition {
  description: string
  /** Sent on every response that declares it. */
  required?: boolean
  schema: { type: 'string' | 'integer' } & Record<string, unknown>
}

/**
 * Every response header the service sends to integrators, defined once. The OpenAPI document
 * lists them as `components.headers` and each response refers to the ones it carries.
 */
export const RESPONSE_HEADERS = {
  'Request-Id': {
    description: 'Identifies this request in our logs; quote it to support. A request\'s own `X-Request-Id` is echoed when it is 1 to 128 of `A-Z a-z 0-9 . _ : -`',
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$', maxLength: 128, examples: [EXAMPLE_REQUEST_ID] }
  },
  'RateLimit-Limit': {
    description: 'Requests allowed in the current window: per API key, or per client IP for requests whose key was refused',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, examples: [600] }
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, examples: [599] }
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, examples: [60] }
  },
  RateLimit: {
    description: 'The same as one structured field: the policy, `r` requests remaining, `t` seconds to the reset',
    schema: { type: 'string', pattern: '^"per-(key|ip)";r=\\d+;t=\\d+$', maxLength: 64, examples: ['"per-key";r=599;t=60'] }
  },
  'RateLimit-Policy': {
    description: 'The policy counting this request: `per-key` or `per-ip`, `q` requests per window of `w` seconds',
    schema: { type: 'string', pattern: '^"per-(key|ip)";q=\\d+;w=\\d+$', maxLength: 64, examples: ['"per-key";q=600;w=60'] }
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying: always on 409 idempotency_key_in_use and 429; on 503 when the pause is known (maintenance, the database unreachable)',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, examples: [60] }
  },
  Location: {
    description: 'The absolute URL of the new order (or reservation)',
    required: true,
    schema: { type: 'string', format: 'uri', maxLength: 2048, examples: ['https://shop.example.com/api/external/v1/orders/7d1c0b2e-4f3a-4e8b-9a61-2c5d8e0f4b17'] }
  },
  'Idempotent-Replayed': {
    description: 'Present when this is the stored response of an earlier request with the same Idempotency-Key, replayed',
    schema: { type: 'string', enum: ['true'] }
  },
  'Cache-Control': {
    description: 'Reads are private to your key: `private, no-cache` (keep it, but send If-None-Match before using it again); order creation, refusals of order requests and exports say `no-store`',
    schema: { type: 'string', enum: ['private, no-cache', 'no-store'] }
  },
  'Changes-Cursor': {
    description: 'Of an export: where to start following the changes feed (`after`) so that no change the export does not show is missed; the same as its last line\'s changesCursor',
    required: true,
    schema: { type: 'string', maxLength: 1000, examples: ['evt_1042'] }
  },
  ETag: {
    description: 'The version of this body: send it back as If-None-Match and an unchanged answer is 304 with no body. It changes whenever the body would, also when a discount starts or ends',
    required: true,
    schema: { type: 'string', maxLength: 64, examples: ['"q6cE0yD0bC7xZt4bV9dYl2dH5g8"'] }
  }
} satisfies Record<string, HeaderDefinition>
export type ResponseHeader = keyof typeof RESPONSE_HEADERS

/** Every /external/v1 request passes the rate limiter before anything can refuse it. */
export const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit', 'RateLimit-Policy'] as const satisfies readonly ResponseHeader[]

type HeadersObject = Record<string, { description: string } & Record<string, unknown>>

/** The `headers` of a route's response, as @fastify/swagger reads them: each header's schema with its description. */
function headersObject (names: readonly ResponseHeader[]): HeadersObject {
  return Object.fromEntries(names.map((name) => [name, { ...RESPONSE_HEADERS[name].schema, description: RESPONSE_HEADERS[name].description }]))
}

export interface ResponseExample { summary?: string, description?: string, value: unknown }

/**
 * A route's documented response: what it means, its JSON body with named examples, and the
 * headers it carries (Request-Id always). The per-media-type form is the one in which
 * @fastify/swagger keeps examples beside a `$ref`; Fastify serializes with its schema alike.
 */
export function documentedResponse<T extends TSchema> (description: string, schema: T, examples: Record<string, ResponseExample>, headers: readonly ResponseHeader[] = []) {
  return {
    description,
    headers: headersObject(['Request-Id', ...headers.filter((name) => name !== 'Request-Id')]),
    content: { 'application/json': { schema, examples } }
  }
}
export type DocumentedResponse<T extends TSchema = TSchema> = ReturnType<typeof documentedResponse<T>>

/**
 * The 200 of a conditional read (with its ETag and Cache-Control) and its 304: no body, the
 * same headers.
 */
export function conditionalResponses<T extends TSchema> (ok: DocumentedResponse<T>, headers: readonly ResponseHeader[]) {
  const withTag = { ...ok, headers: { ...ok.headers, ...headersObject(['ETag', 'Cache-Control']) } }
  return {
    200: withTag,
    304: { description: 'Not modified: If-None-Match holds the current ETag. No body; the same headers as a 200', type: 'null', headers: headersObject(['Request-Id', 'ETag', 'Cache-Control', ...headers]) }
  }
}

/** The same responses, each also declaring the headers `pick` names for its status. */
export function withHeaders<R extends Record<number, DocumentedResponse>> (responses: R, pick: (status: number) => readonly ResponseHeader[]): R {
  return Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, {
    ...response,
    headers: { ...response.headers, ...headersObject(pick(Number(status))) }
  }])) as R
}

/** An error body as the documentation shows it: a message the service really sends, and details where it sends them. */
export interface ErrorExample<C extends ErrorCode = ErrorCode> {
  code: C
  message: string
  details?: ErrorDetailValue[]
}

// One example per code; the `Record` over every code makes a new code fail the type check
// until it has its example.
const ERROR_EXAMPLES: { [C in ErrorCode]: Omit<ErrorExample<C>, 'code'> } = {
  validation_failed: { message: 'query.page: must be an integer', details: [{ path: 'query.page', message: 'must be an integer' }] },
  invalid_json: { message: ERRORS.invalid_json.message },
  invalid_product_id: { message: ERRORS.invalid_product_id.message },
  customer_name_required: { message: ERRORS.customer_name_required.message },
  items_required: { message: ERRORS.items_required.message },
  invalid_item: { message: 'items[0].productId matches no product' },
  invalid_quantity: { message: 'items[1].quantity must be a whole number from 1 to 100,000' },
  invalid_phone_number: { message: 'customerPhone is not a valid phone number: write it with +country code, or send an ISO alpha-2 address.country' },
  invalid_status_transition: { message: 'The order is delivered: it cannot go to cancelled; it cannot change any more' },
  test_mode_only: { message: ERRORS.test_mode_only.message },
  order_creation_failed: {
    message: '2 lines cannot be ordered: items[0]: not enough stock for "Canvas Apron (Sand)": 2 available; items[1]: "Barista T-shirt" has combinations; send a combinationId',
    details: [
      { path: 'items[0]', reason: 'out_of_stock', message: 'items[0]: not enough stock for "Canvas Apron (Sand)": 2 available', available: 2 },
      { path: 'items[1]', reason: 'combination_required', message: 'items[1]: "Barista T-shirt" has combinations; send a combinationId' }
    ]
  },
  reservation_failed: {
    message: 'items[0]: not enough stock for "Canvas Apron (Sand)": 2 available',
    details: [{ path: 'items[0]', reason: 'out_of_stock', message: 'items[0]: not enough stock for "Canvas Apron (Sand)": 2 available', available: 2 }]
  },
  reservation_mismatch: { message: 'The order\'s lines must hold what the reservation holds: Colombia Huila 250 g is reserved 2, ordered 1' },
  reservation_limit_reached: { message: ERRORS.reservation_limit_reached.message },
  reservation_not_found: { message: ERRORS.reservation_not_found.message },
  reservation_not_active: { message: 'The reservation is expired; hold the stock again' },
  invalid_webhook_url: { message: 'url: the host 10.0.0.7 is a private address; webhooks are delivered to public hosts only' },
  webhook_limit_reached: { message: ERRORS.webhook_limit_reached.message },
  invalid_cursor: { message: ERRORS.invalid_cursor.message },
  malformed_request: { message: ERRORS.malformed_request.message },
  request_timeout: { message: ERRORS.request_timeout.message },
  request_header_too_large: { message: 'The request headers are larger than the service accepts (16 KiB); the connection is closed' },
  cursor_expired: { message: ERRORS.cursor_expired.message },
  invalid_api_key: { message: 'Send your API key in the X-Api-Key header or as Authorization: Api-Key <key>' },
  insufficient_scope: { message: ERRORS.insufficient_scope.message },
  not_found: { message: 'No route for GET /external/v1/product' },
  product_not_found: { message: ERRORS.product_not_found.message },
  order_not_found: { message: ERRORS.order_not_found.message },
  webhook_not_found: { message: ERRORS.webhook_not_found.message },
  idempotency_key_in_use: { message: ERRORS.idempotency_key_in_use.message },
  payload_too_large: { message: ERRORS.payload_too_large.message },
  unsupported_media_type: { message: ERRORS.unsupported_media_type.message },
  idempotency_key_reused: { message: ERRORS.idempotency_key_reused.message },
  rate_limit_exceeded: { message: 'Rate limit exceeded: 600 requests per 60 s; retry in 42 seconds' },
  internal_error: { message: ERRORS.internal_error.message },
  store_under_maintenance: { message: ERRORS.store_under_maintenance.message },
  service_unavailable: { message: ERRORS.service_unavailable.message }
}

type StatusOf<C extends ErrorCode> = (typeof ERRORS)[C]['status']

/**
 * The documented error responses of an operation, from the codes it can answer: one
 * response per status, describing each code with its default message and showing one named
 * example body per code. A code given as an `ErrorExample` shows that body instead (an
 * operation's own validation failure, say); the first mention of a code wins.
 */
export function errorResponses<C extends ErrorCode> (...codes: Array<C | ErrorExample<C>>) {
  const examples = new Map<ErrorCode, ErrorExample>()
  for (const entry of codes) {
    const example: ErrorExample = typeof entry === 'string' ? { code: entry, ...ERROR_EXAMPLES[entry as ErrorCode] } : entry
    if (!examples.has(example.code)) examples.set(example.code, example)
  }
  const byStatus = new Map<number, ErrorExample[]>()
  for (const example of examples.values()) {
    const status = ERRORS[example.code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), example])
  }
  return Object.fromEntries([...byStatus].map(([status, list]) => [status, documentedResponse(
    list.map(({ code }) => `\`${code}\`: ${ERRORS[code].message}`).join('; '),
    ref(ErrorBody),
    // Named by code, without a summary: a reference lists the examples by their names.
    Object.fromEntries(list.map(({ code, message, details }) => [code, {
      value: { error: code, message, requestId: EXAMPLE_REQUEST_ID, ...(details ? { details } : {}) }
    }]))
  )])) as unknown as Record<StatusOf<C>, DocumentedResponse<ReturnType<typeof ref<typeof ErrorBody>>>>
}
