// Wire shapes shared by every resource: ids, money, the page envelope, the error body.
import { Type, type Static, type TSchema } from 'typebox'

/** A reference to a shared schema registered with `addSchema`; typed as the schema it names. */
export function ref<T extends TSchema & { $id?: string }> (schema: T) {
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id!}#` })
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const uuidRegex = new RegExp(UUID_PATTERN)
export const isUuid = (value: unknown): value is string => typeof value === 'string' && uuidRegex.test(value)

export const Uuid = Type.String({ format: 'uuid', pattern: UUID_PATTERN, examples: ['c0ffee00-0000-4000-8000-000000000001'] })
export const Money = Type.Number({ description: 'Amount with at most two decimals', examples: [19.99] })
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const ErrorDetail = Type.Object({
  path: Type.String({ examples: ['/items/0/quantity'] }),
  message: Type.String({ examples: ['must be integer'] })
})

export const ErrorBody = Type.Object({
  error: Type.String({ description: 'Machine-readable error code', examples: ['product_not_found'] }),
  message: Type.String({ description: 'Human-readable explanation', examples: ['No product matches that id'] }),
  requestId: Type.String({ description: 'Echoed in the Request-Id header; quote it to support', examples: ['req-8f3a2c'] }),
  details: Type.Optional(Type.Array(ErrorDetail, { description: 'Present on validation errors' }))
}, { $id: 'Error', title: 'Error', additionalProperties: false })
export type ErrorBody = Static<typeof ErrorBody>

export const PAGE_SIZE = 25

/** The page a list answers (values below 1 are page 1) and the rows it covers. */
export function pageWindow (requested: number | undefined) {
  const page = Math.max(1, requested ?? 1)
  return { page, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE }
}

export function Page<T extends TSchema> (item: T, id: string, description: string) {
  return Type.Object({
    items: Type.Array(item),
    page: Type.Integer({ minimum: 1, description: 'Current page, one-based' }),
    pageSize: Type.Integer({ description: 'Always 25', examples: [PAGE_SIZE] }),
    total: Type.Integer({ minimum: 0, description: 'Total matching records' })
  }, { $id: id, title: id, description, additionalProperties: false })
}

export const PageQuery = Type.Integer({
  description: 'One-based page number; values below 1 are treated as 1',
  default: 1,
  maximum: 1_000_000_000
})

/** An error response of the given statuses, all answering the shared Error body. */
export function errorResponses<S extends number> (...statuses: Array<[S, string]>) {
  return Object.fromEntries(statuses.map(([status, description]) =>
    [status, { ...ref(ErrorBody), description }])) as unknown as Record<S, ReturnType<typeof ref<typeof ErrorBody>>>
}
