// The one validation setup: two Ajv instances over the same shared schemas. Query strings
// and path parameters are coerced (`page=2` is a number); bodies, the create-order body and
// catalogue files alike, never are (`"quantity": "2"` stays a string). Errors become
// details `{ path, message }` that name the field and say what it must be.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { clipPath } from '../errors.ts'
import { LIST_KEYWORD, UUID_PATTERN } from '../schemas/common.ts'

/** The instants every timestamp the API reads must lie within: years PostgreSQL and JavaScript both hold. */
export const INSTANT_RANGE = { min: '0001-01-01T00:00:00Z', max: '9999-12-31T23:59:59Z' } as const
const INSTANT_MIN_MS = Date.parse(INSTANT_RANGE.min)
const INSTANT_MAX_MS = Date.parse(INSTANT_RANGE.max)
const RANGE_PROBLEM = `must be from ${INSTANT_RANGE.min} to ${INSTANT_RANGE.max}`
// The parts of what ajv-formats takes as a date-time (its separator may be any space, the offset's minutes may be left out).
const RFC3339_PARTS = /^(\d{4})-(\d\d)-(\d\d)[Tt\s](\d\d):(\d\d):(\d\d)(\.\d+)?(?:[Zz]|([+-])(\d\d)(?::?(\d\d))?)$/
const isRfc3339 = (addFormats.default.get('date-time') as { validate: (text: string) => boolean }).validate

/** The largest UTC offset PostgreSQL takes (RFC 3339 allows up to 23:59; no zone is beyond 14:00). */
const MAX_OFFSET_MINUTES = 15 * 60 + 59

/**
 * What keeps an RFC 3339 date-time (already checked as one) from being an instant the
 * database takes, or null: an offset beyond ±15:59, or an instant outside INSTANT_RANGE once
 * the offset is applied (PostgreSQL refuses year 0, and an offset can push
 * 0001-01-01T00:00:00+01:00 into it).
 */
export function instantProblem (text: string): string | null {
  const parts = RFC3339_PARTS.exec(text)
  if (parts === null) return `must be ${FORMAT_NAMES['date-time']!}`
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = parts
  const offsetInMinutes = Number(offsetHours) * 60 + Number(offsetMinutes)
  if (offsetInMinutes > MAX_OFFSET_MINUTES) return 'must have a UTC offset from -15:59 to +15:59'
  const at = new Date(0)
  // setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
  at.setUTCFullYear(Number(year), Number(month) - 1, Number(day))
  at.setUTCHours(Number(hour), Number(minute), Number(second), Number(`0${fraction}`) * 1000)
  const ms = at.getTime() - (sign === '-' ? -1 : 1) * offsetInMinutes * 60_000
  // A fraction of a millisecond past the last second is past it too.
  const beyond = ms > INSTANT_MAX_MS || (ms === INSTANT_MAX_MS && /[1-9]/.test(fraction))
  return ms < INSTANT_MIN_MS || beyond ? RANGE_PROBLEM : null
}

function makeAjv (coerceTypes: 'array' | false): Ajv {
  // verbose: errors carry the value, so a timestamp out of range is told from one that is no timestamp.
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: true, allErrors: true, strict: false, verbose: true })
  addFormats.default(ajv)
  // ajv-formats' uuid also takes a `urn:uuid:` prefix, which PostgreSQL's uuid type refuses.
  ajv.addFormat('uuid', new RegExp(UUID_PATTERN))
  // Every timestamp, of a query, a body or a catalogue file, is held to the range here.
  ajv.addFormat('date-time', { type: 'string', validate: (text: string) => isRfc3339(text) && instantProblem(text) === null })
  return ajv
}

export const queryAjv = makeAjv('array')
export const bodyAjv = makeAjv(false)

/** Registers shared schemas (by `$id`) with both instances, once however many apps are built. */
export function addSharedSchemas (schemas: Iterable<object>): void {
  for (const schema of schemas as Iterable<{ $id?: string }>) {
    if (schema.$id === undefined) continue
    for (const ajv of [queryAjv, bodyAjv]) if (ajv.getSchema(schema.$id) === undefined) ajv.addSchema(schema)
  }
}

/** Fastify's schema compiler: bodies on the strict instance, everything else coerced. */
export function buildValidator (externalSchemas: Record<string, { $id?: string }> = {}): FastifySchemaCompiler<unknown> {
  addSharedSchemas(Object.values(externalSchemas))
  return ({ schema, httpPart }) => {
    const validate = (httpPart === 'body' ? bodyAjv : queryAjv).compile(schema as object) as ValidateFunction
    return httpPart === 'querystring' ? withRepeatedParameters(schema as object, validate) : validate
  }
}

type Validator = ((data: unknown, context?: Parameters<ValidateFunction>[1]) => boolean) & { errors?: ErrorObject[] | null, schemaEnv?: unknown }

/**
 * A query's validator that first reads parameters sent more than once (the query parser
 * makes them arrays): a list parameter (LIST_KEYWORD) sent several times means its
 * comma-separated form, and is then held to the same length limit; any other declared
 * parameter sent twice is refused by name, as no value of it could be the one meant.
 */
export function withRepeatedParameters (schema: object, validate: ValidateFunction): Validator {
  const properties = (schema as { properties?: Record<string, Record<string, unknown>> }).properties
  if (properties === undefined) return validate
  const names = Object.keys(properties)
  const lists = new Set(names.filter((name) => properties[name]![LIST_KEYWORD] === true))
  const check: Validator = (query, context) => {
    if (typeof query === 'object' && query !== null) {
      const values = query as Record<string, unknown>
      const repeated: ErrorObject[] = []
      for (const name of names) {
        const value = values[name]
        if (!Array.isArray(value)) continue
        if (lists.has(name)) values[name] = value.join(',')
        else repeated.push({ keyword: 'repeated', instancePath: `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`, schemaPath: '#/properties', params: {}, message: `must be sent once (it was sent ${value.length} times)` })
      }
      if (repeated.length > 0) {
        check.errors = repeated
        return false
      }
    }
    const valid = validate(query, context)
    check.errors = validate.errors
    return valid as boolean
  }
  // Fastify hands a validator with a schemaEnv its parent, so Ajv may coerce the root.
  check.schemaEnv = validate.schemaEnv
  return check
}

/** `/items/0/quantity` → `items[0].quantity`: the path shape of every error detail. */
export function dottedPath (pointer: string, missingProperty?: string): string {
  const parts = pointer.split('/').filter((p) => p !== '').map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
  if (missingProperty) parts.push(missingProperty)
  return parts.reduce((path, part) => /^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part, '')
}

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`)
const FORMAT_NAMES: Record<string, string> = {
  uuid: 'a GUID',
  'date-time': 'an ISO 8601 date-time with a UTC offset',
  uri: 'an absolute URL',
  int32: 'a 32-bit integer',
  int64: 'a 64-bit integer'
}

/** Why a date-time the database cannot take fails, when it is well-formed (or merely has a year of five digits or more). */
function dateTimeProblem (value: unknown): string | null {
  if (typeof value !== 'string') return null
  if (isRfc3339(value)) return instantProblem(value)
  return /^[+-]?\d{5,}-\d\d-\d\d[Tt ]/.test(value) ? RANGE_PROBLEM : null
}

function problemOf (error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required': return 'is required'
    case 'type': {
      const types = ([] as string[]).concat(params.type as string | string[])
      return `must be ${types.map((t) => (t === 'null' ? 'null' : article(t))).join(' or ')}`
    }
    case 'enum': return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'const': return `must be ${JSON.stringify(params.allowedValue)}`
    case 'format': {
      const instant = params.format === 'date-time' ? dateTimeProblem(error.data) : null
      if (instant !== null) return instant
      return `must be ${FORMAT_NAMES[String(params.format)] ?? `${article(String(params.format))} string`}`
    }
    case 'maxLength': return `must be at most ${String(params.limit)} characters long`
    case 'minLength': return `must be at least ${String(params.limit)} characters long`
    case 'maxItems': return `must have at most ${String(params.limit)} items`
    case 'minItems': return `must have at least ${String(params.limit)} items`
    default: return error.message ?? 'is invalid'
  }
}

/**
 * One detail per offending field. A failed `anyOf` (a nullable field, a union) reports only
 * its most telling branch: "must be <= 90" for a latitude of 91, not also "must be null"
 * and "must match a schema in anyOf".
 */
export function validationDetails (errors: ErrorObject[], prefix = ''): Array<{ path: string, message: string }> {
  const byPath = new Map<string, ErrorObject[]>()
  for (const error of errors) {
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf' || error.keyword === 'if') continue
    const path = dottedPath(error.instancePath, (error.params as { missingProperty?: string }).missingProperty)
    byPath.set(path, [...(byPath.get(path) ?? []), error])
  }
  // A nullable object that failed inside (a latitude of 91) also failed "must be null" one
  // level up: that says nothing the inner error does not.
  const onlyNotNull = (found: ErrorObject[]) => found.every((e) => e.keyword === 'type' && (e.params as { type: unknown }).type === 'null')
  const paths = [...byPath.keys()]
  for (const [path, found] of byPath) {
    if (onlyNotNull(found) && paths.some((p) => p !== path && (path === '' || p.startsWith(`${path}.`) || p.startsWith(`${path}[`)))) byPath.delete(path)
  }
  const details: Array<{ path: string, message: string }> = []
  for (const [path, found] of byPath) {
    // A branch that failed only for not being null says less than one that failed on the value.
    // An integer range's format (int32) fails beside its maximum: the maximum says it better.
    const restates = (e: ErrorObject) => (e.keyword === 'type' && (e.params as { type: unknown }).type === 'null') ||
      (e.keyword === 'format' && /^int(32|64)$/.test(String((e.params as { format: unknown }).format)))
    const telling = found.filter((e) => !restates(e))
    const chosen = telling.length > 0 ? telling : found
    // Literal unions (`true` or `false`) fail one `const` per branch: name them all at once.
    const consts = chosen.filter((e) => e.keyword === 'const')
    const messages = consts.length > 1
      ? [`must be one of ${consts.map((e) => JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)).join(', ')}`]
      : [...new Set(chosen.map(problemOf))]
    const fullPath = clipPath([prefix, path].filter(Boolean).join('.') || '(root)')
    for (const message of messages) details.push({ path: fullPath, message })
  }
  return details
}

// With the u flag a surrogate pair is one code point: only a lone half matches.
const LONE_SURROGATE = /\p{Cs}/u

/** How deep a request body may nest: no order or catalogue needs more, and a walk stays cheap. */
export const MAX_DEPTH = 32

/**
 * A key through which careless code could reach an object's prototype: `__proto__`, or a
 * `constructor` object holding a `prototype`. JSON parsing keeps them as plain keys; the walk
 * below refuses them, so no handler ever sees one.
 */
function prototypeKey (item: object): string | null {
  if (Object.hasOwn(item, '__proto__')) return '__proto__'
  const constructor = Object.hasOwn(item, 'constructor') ? (item as { constructor: unknown }).constructor : undefined
  if (typeof constructor === 'object' && constructor !== null && Object.hasOwn(constructor, 'prototype')) return 'constructor.prototype'
  return null
}

/**
 * Strings the database cannot store, wherever they are in a JSON value: a NUL character
 * (PostgreSQL text cannot hold U+0000) or a lone surrogate (not Unicode; jsonb refuses it);
 * a `__proto__` or `constructor.prototype` key; and nesting deeper than MAX_DEPTH. Returns `[path, problem]` pairs, paths like
 * `items[0].name` or `(root)`. Walks without recursion, so no input can exhaust the stack.
 */
export function unstorableStrings (value: unknown, path = ''): Array<[string, string]> {
  const problems: Array<[string, string]> = []
  const pending: Array<[unknown, string, number]> = [[value, path, 0]]
  while (pending.length > 0) {
    const [item, at, depth] = pending.pop()!
    const where = at || '(root)'
    if (typeof item === 'string') {
      if (item.includes('\u0000')) problems.push([where, 'must not contain the character U+0000'])
      else if (LONE_SURROGATE.test(item)) problems.push([where, 'must be valid Unicode (it holds a lone surrogate)'])
    } else if (item !== null && typeof item === 'object') {
      if (depth >= MAX_DEPTH) {
        problems.push([where, `must not nest more than ${MAX_DEPTH} levels deep`])
        continue
      }
      if (!Array.isArray(item)) {
        const prototype = prototypeKey(item)
        if (prototype !== null) {
          problems.push([where, `must not contain a ${prototype} key`])
          continue
        }
      }
      const entries = Array.isArray(item) ? item.map((v, i) => [`${at}[${i}]`, v] as const) : Object.entries(item).map(([k, v]) => [at ? `${at}.${k}` : k, v] as const)
      // Reversed onto the stack, so problems come out in document order.
      for (let i = entries.length - 1; i >= 0; i--) pending.push([entries[i]![1], entries[i]![0], depth + 1])
    }
  }
  return problems
}
