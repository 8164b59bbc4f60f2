// Two Ajv compilers over the same shared schemas: query strings and params are coerced
// (`page=2` is a number), request bodies never are (`"quantity": "2"` stays a string).
import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifySchemaCompiler } from 'fastify'

const coercing = { coerceTypes: 'array', useDefaults: true, removeAdditional: true, allErrors: false } as const
const strict = { ...coercing, coerceTypes: false } as const

export function buildValidator (externalSchemas: unknown, serverOptions: { customOptions?: object, plugins?: unknown[] } = {}): FastifySchemaCompiler<unknown> {
  const factory = AjvCompiler()
  const plugins = serverOptions.plugins ?? []
  const forQuery = factory(externalSchemas as never, { customOptions: coercing, plugins } as never)
  const forBody = factory(externalSchemas as never, { customOptions: strict, plugins } as never)
  return (route) => (route.httpPart === 'body' ? forBody : forQuery)(route as never)
}

/** `/items/0/quantity` → `items[0].quantity`: the path shape of every error detail. */
export function dottedPath (pointer: string, missingProperty?: string): string {
  const parts = pointer.split('/').filter((p) => p !== '').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
  if (missingProperty) parts.push(missingProperty)
  return parts.reduce((path, part) => /^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part, '')
}
