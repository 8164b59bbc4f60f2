// Wire shapes shared by every resource: ids, money, the page envelope, the error body.
import { Type, type Static, type TSchema } from 'typebox'
import { ERROR_CODES, ERRORS, LINE_FAILURE_REASONS, type ErrorCode, type LineFailureReason } from '../errors.ts'

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
  message: Type.String({ maxLength: 2000, description: 'Human-readable explanation', examples: ['No product matches that id'] }),
  requestId: Type.String({ maxLength: 128, description: 'Echoed in the Request-Id header; quote it to support', examples: ['req-8f3a2c'] }),
  details: Type.Optional(Type.Array(ErrorDetail, { maxItems: 500, description: 'On validation errors, the offending fields; on order_creation_failed, the lines that cannot be ordered' }))
}, { $id: 'Error', title: 'Error', additionalProperties: false })
export type ErrorBody = Static<typeof ErrorBody>

export const PAGE_SIZE = 25

/** The largest page number: PostgreSQL's integer, so no page is too large to compute. */
export const MAX_PAGE = 2_147_483_647

/** The page a list answers (values below 1 are page 1) and the rows it covers. */
export function pageWindow (requested: number | undefined) {
  const page = Math.max(1, requested ?? 1)
  return { page, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE }
}

export function Page<T extends TSchema> (item: T, id: string, description: string) {
  return Type.Object({
    items: Type.Array(item, { maxItems: PAGE_SIZE }),
    page: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_PAGE, description: 'Current page, one-based' }),
    pageSize: Type.Integer({ format: 'int32', minimum: PAGE_SIZE, maximum: PAGE_SIZE, description: 'Always 25', examples: [PAGE_SIZE] }),
    total: Count('Total matching records')
  }, { $id: id, title: id, description, additionalProperties: false })
}

// Bounded below too: a coerced `-Infinity` passes Ajv's integer check, never its minimum.
export const PageQuery = Type.Integer({
  description: 'One-based page number; values below 1 are treated as 1',
  default: 1,
  format: 'int32',
  minimum: -MAX_PAGE - 1,
  maximum: MAX_PAGE
})

type StatusOf<C extends ErrorCode> = (typeof ERRORS)[C]['status']

/**
 * The documented error responses of an operation, from the codes it can answer: one
 * response per status, describing each code with its default message.
 */
export function errorResponses<C extends ErrorCode> (...codes: C[]) {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code])
  return Object.fromEntries([...byStatus].map(([status, list]) => [status, {
    ...ref(ErrorBody),
    description: list.map((code) => `\`${code}\`: ${ERRORS[code].message}`).join('; ')
  }])) as unknown as Record<StatusOf<C>, ReturnType<typeof ref<typeof ErrorBody>>>
}
