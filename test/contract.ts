// The committed openapi.yaml as an executable contract: every response a test receives can
// be checked against what the document promises for its operation and status. Integrators
// generate clients from that file, so a response it does not describe is a bug in the app
// or in the document, whichever test happened to produce it.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { parse } from 'yaml'

export type JsonSchema = Record<string, unknown>

export interface ParameterObject {
  name: string
  in: 'query' | 'path' | 'header' | 'cookie'
  required?: boolean
  schema?: JsonSchema
}

interface HeaderObject { required?: boolean, schema?: JsonSchema }

interface ResponseObject {
  headers?: Record<string, HeaderObject>
  content?: Record<string, { schema?: JsonSchema }>
}

export interface OperationObject {
  operationId?: string
  parameters?: ParameterObject[]
  requestBody?: { required?: boolean, content?: Record<string, { schema?: JsonSchema }> }
  responses: Record<string, ResponseObject>
  security?: unknown[]
}

export interface OpenApiDocument {
  components: { schemas: Record<string, JsonSchema> }
  paths: Record<string, Record<string, OperationObject>>
}

export interface Operation {
  method: string
  /** The path template as the document writes it, e.g. `/external/v1/orders/{orderNumberOrId}`. */
  path: string
  operation: OperationObject
  matcher: RegExp
}

export interface CheckedResponse {
  statusCode: number
  headers: Record<string, unknown>
  /** The raw payload (string or Buffer) or an already parsed JSON value. */
  body?: unknown
}

export const OPENAPI_PATH = fileURLToPath(new URL('../openapi.yaml', import.meta.url))
const DOCUMENT_ID = 'urn:storefront:openapi'
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
// The router's own namespace: a path under it that the document lacks is still an answer
// integrators read, so it must at least be the documented error body.
const API_PREFIX = '/external/v1/'

interface Contract {
  document: OpenApiDocument
  operations: Operation[]
  ajv: Ajv2020
  validators: Map<string, ValidateFunction>
}

let loaded: Contract | undefined

function templateMatcher (template: string): RegExp {
  const escaped = template.split(/(\{[^}]+\})/).map((part) =>
    /^\{[^}]+\}$/.test(part) ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${escaped.join('')}$`)
}

function contract (): Contract {
  if (loaded) return loaded
  const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenApiDocument
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  // The components under an id of their own, so `#/components/schemas/X` resolves as `id#/…`.
  ajv.addSchema({ $id: DOCUMENT_ID, components: document.components })
  const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation, matcher: templateMatcher(path) })))
  loaded = { document, operations, ajv, validators: new Map() }
  return loaded
}

/** The parsed document and its operations, loaded once per process. */
export function openApi (): { document: OpenApiDocument, operations: Operation[] } {
  const { document, operations } = contract()
  return { document, operations }
}

/** A schema with every `#/components/...` reference pointing into the loaded document. */
function anchored (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(anchored)
  if (typeof schema !== 'object' || schema === null) return schema
  return Object.fromEntries(Object.entries(schema).map(([key, value]) =>
    [key, key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `${DOCUMENT_ID}${value}` : anchored(value)]))
}

function validator (cacheKey: string, schema: JsonSchema): ValidateFunction {
  const { ajv, validators } = contract()
  let validate = validators.get(cacheKey)
  if (!validate) {
    validate = ajv.compile(anchored(schema) as JsonSchema)
    validators.set(cacheKey, validate)
  }
  return validate
}

/** A `$ref` into the document followed to the schema it names (one level). */
export function resolveRef (schema: JsonSchema): JsonSchema {
  const ref = schema.$ref
  if (typeof ref !== 'string') return schema
  const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1]
  const target = name === undefined ? undefined : contract().document.components.schemas[name]
  if (!target) throw new Error(`openapi.yaml: unresolvable $ref ${ref}`)
  return resolveRef(target)
}

function pathOf (url: string): string {
  const path = url.split(/[?#]/, 1)[0]!
  // The router ignores one trailing slash, so `/products/` is `/products`.
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
}

/** The documented operation a request reaches, if any. */
export function findOperation (method: string, url: string): Operation | undefined {
  const path = pathOf(url)
  const wanted = method.toUpperCase()
  // As the router does, a fixed segment wins over a parameter (`/products/export` over `/products/{id}`).
  const matching = contract().operations.filter((o) => o.method === wanted && o.matcher.test(path))
  return matching.sort((a, b) => a.path.split('{').length - b.path.split('{').length)[0]
}

function headerValue (headers: Record<string, unknown>, name: string): unknown {
  const lower = name.toLowerCase()
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === lower)
  return found?.[1]
}

function rawText (body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  if (Buffer.isBuffer(body)) return body.toString('utf8')
  return undefined
}

type Parsed = { ok: true, value: unknown, empty: boolean } | { ok: false, problem: string }

function parsedBody (response: CheckedResponse): Parsed {
  const text = rawText(response.body)
  if (text === undefined && response.body !== undefined && response.body !== null) return { ok: true, value: response.body, empty: false }
  if (text === undefined || text === '') return { ok: true, value: undefined, empty: true }
  try {
    return { ok: true, value: JSON.parse(text), empty: false }
  } catch {
    return { ok: false, problem: `the body is not JSON: ${JSON.stringify(text.slice(0, 200))}` }
  }
}

function errorText (validate: ValidateFunction): string {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : ''}`).join('; ')
}

function responseFor (operation: OperationObject, status: number): [string, ResponseObject] | undefined {
  const exact = String(status)
  const range = `${exact[0]}XX`
  for (const key of [exact, range, 'default']) {
    const response = operation.responses[key]
    if (response) return [key, response]
  }
  return undefined
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/**
 * What is wrong with a response to `METHOD url`, by the committed document: an empty list
 * when it matches or when the document does not describe the path (service pages such as
 * /metrics or /docs, test-only routes). An unknown path under /external/v1 must still answer
 * the documented Error body.
 */
export function checkResponse (method: string, url: string, response: CheckedResponse): string[] {
  const upper = method.toUpperCase()
  // HEAD is answered by the GET route without a body: status and headers are still the GET's.
  const found = findOperation(upper === 'HEAD' ? 'GET' : upper, url)
  if (!found) {
    if (!pathOf(url).startsWith(API_PREFIX) && pathOf(url) !== API_PREFIX.slice(0, -1)) return []
    if (upper === 'HEAD') return response.statusCode >= 400 ? [] : [`${response.statusCode} for a route the document does not describe`]
    const problems: string[] = []
    if (response.statusCode < 400) problems.push(`${response.statusCode} for a route the document does not describe`)
    const parsed = parsedBody(response)
    if (!parsed.ok) return [...problems, parsed.problem]
    const validate = validator('unknown-route', { $ref: '#/components/schemas/Error' })
    if (!validate(parsed.value)) problems.push(`the body is not the Error shape: ${errorText(validate)}`)
    return problems
  }

  const operationKey = `${found.method} ${found.path}`
  const declared = responseFor(found.operation, response.statusCode)
  if (!declared) {
    return [`status ${response.statusCode} is not declared for ${operationKey} (declared: ${Object.keys(found.operation.responses).join(', ')})`]
  }
  const [statusKey, described] = declared
  const problems: string[] = []

  for (const [name, header] of Object.entries(described.headers ?? {})) {
    const value = headerValue(response.headers, name)
    if (value === undefined) {
      if (header.required) problems.push(`the required header ${name} is missing`)
      continue
    }
    if (header.schema) {
      const validate = validator(`${operationKey} ${statusKey} header ${name}`, header.schema)
      if (!validate(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${errorText(validate)}`)
    }
  }

  if (upper === 'HEAD') return problems
  const parsed = parsedBody(response)
  const content = described.content
  if (response.statusCode === 204 || response.statusCode === 304 || content === undefined) {
    if (!parsed.ok || !parsed.empty) problems.push(`a ${response.statusCode} of ${operationKey} has no body in the document, but one was sent`)
    return problems
  }
  const ndjson = content[NDJSON]
  if (ndjson?.schema) return [...problems, ...ndjsonProblems(response, `${operationKey} ${statusKey}`, ndjson.schema)]
  const json = content['application/json']
  if (!json?.schema) return problems
  const type = headerValue(response.headers, 'content-type')
  if (typeof type !== 'string' || !JSON_TYPE.test(type)) problems.push(`content-type ${JSON.stringify(type)} is not application/json`)
  if (!parsed.ok) return [...problems, parsed.problem]
  if (parsed.empty) return [...problems, 'the body is empty, the document describes a JSON body']
  const validate = validator(`${operationKey} ${statusKey}`, json.schema)
  if (!validate(parsed.value)) problems.push(`the body does not match ${operationKey} ${statusKey}: ${errorText(validate)}`)
  return problems
}

const NDJSON = 'application/x-ndjson'

/** An NDJSON body (a stream of lines, each its own JSON value): every line must match the schema, which describes one. */
function ndjsonProblems (response: CheckedResponse, key: string, schema: JsonSchema): string[] {
  const type = headerValue(response.headers, 'content-type')
  if (typeof type !== 'string' || type.split(';')[0]!.trim() !== NDJSON) return [`content-type ${JSON.stringify(type)} is not ${NDJSON}`]
  // A compressed body is checked by whoever inflates it.
  if (headerValue(response.headers, 'content-encoding') !== undefined) return []
  const text = rawText(response.body) ?? ''
  if (!text.endsWith('\n')) return ['an NDJSON body must end with a newline']
  const validate = validator(`${key} line`, schema)
  const problems: string[] = []
  text.slice(0, -1).split('\n').forEach((line, i) => {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      problems.push(`line ${i + 1} is not JSON: ${JSON.stringify(line.slice(0, 200))}`)
      return
    }
    if (!validate(value)) problems.push(`line ${i + 1} does not match ${key}: ${errorText(validate)}`)
  })
  return problems.slice(0, 10)
}

interface InjectedResponse { statusCode: number, headers: Record<string, unknown>, body: string }
interface InjectOptionsLike { method?: string, url?: string | { pathname?: string, query?: unknown }, path?: string | { pathname?: string } }

function requestTarget (options: string | InjectOptionsLike): { method: string, url: string } {
  if (typeof options === 'string') return { method: 'GET', url: options }
  const target = options.url ?? options.path ?? '/'
  return { method: (options.method ?? 'GET').toUpperCase(), url: typeof target === 'string' ? target : target.pathname ?? '/' }
}

/**
 * Makes `app.inject(options)` and `app.inject(url)` reject when the response breaks the
 * document, naming the request and what did not match. The callback and chained forms are
 * left as they are.
 */
export function enforceContract<T extends { inject: (...args: never[]) => unknown }> (app: T): void {
  const original = (app.inject as (...args: unknown[]) => unknown).bind(app)
  const checked = (...args: unknown[]) => {
    const [options, callback] = args
    if (options === undefined || callback !== undefined) return original(...args)
    const result = original(options) as Promise<InjectedResponse>
    return result.then((response) => {
      const { method, url } = requestTarget(options as string | InjectOptionsLike)
      const problems = checkResponse(method, url, response)
      if (problems.length > 0) {
        throw new Error(`response breaks openapi.yaml: ${method} ${url} → ${response.statusCode}\n  ${problems.join('\n  ')}\n  body: ${response.body.slice(0, 500)}`)
      }
      return response
    })
  }
  app.inject = checked as unknown as T['inject']
}
