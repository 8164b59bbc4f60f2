// The interactive reference and what the document promises a partner: /docs is the store's
// own page; every response shows an example that tells the truth; every request example
// works as it is against the demo catalogue; the declared headers are the ones sent.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import { DEFAULT_API_TITLE } from '../../config.ts'
import { writeSetting } from '../../db/settings.ts'
import { ERRORS, type ErrorCode } from '../../errors.ts'
import { RESPONSE_EXAMPLES } from '../../schemas/examples.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { demoCatalog } from '../../services/demo-catalog.ts'
import { authHeaders, buildTestApp, makeKey, pollState } from '../helper.ts'

type Json = Record<string, any>
interface Media { schema?: Json, example?: unknown, examples?: Record<string, { value: unknown }> }
interface Response { description: string, headers?: Record<string, Json>, content?: Record<string, Media> }
interface Parameter { name: string, in: string, example?: unknown, required?: boolean }
interface Operation {
  operationId: string
  tags?: string[]
  parameters?: Parameter[]
  requestBody?: { content: Record<string, Media> }
  responses: Record<string, Response>
}
interface Document { paths: Record<string, Record<string, Operation>>, components: Json }

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch'])

function operationsOf (document: Document) {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => METHODS.has(method))
    .map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, operation })))
}

/** Follows a local `$ref` of the document. */
function resolve (document: Document, value: Json): Json {
  if (typeof value.$ref !== 'string') return value
  return (value.$ref as string).slice(2).split('/').reduce<Json>((node, part) => node[part], document)
}

function examplesOf (media: Media | undefined): unknown[] {
  if (media === undefined) return []
  return [...(media.example === undefined ? [] : [media.example]), ...Object.values(media.examples ?? {}).map((e) => e.value)]
}

const NDJSON = 'application/x-ndjson'

/** A response's body as documented: JSON, or an export's NDJSON lines. */
const bodyOf = (response: Response | undefined): Media | undefined => response?.content?.['application/json'] ?? response?.content?.[NDJSON]

/** The documented success status of an operation, as a number. */
const successOf = (operation: Operation) => Number(Object.keys(operation.responses).find((status) => /^2\d\d$/.test(status)))

/** Orders are created anew for each test: their id and time differ from the example's. */
function withoutVolatile (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutVolatile)
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value).map(([k, v]) => [k, withoutVolatile(v)])
  const object = Object.fromEntries(entries) as Json
  if ('orderNumber' in object) { delete object.id; delete object.date }
  // So are webhook endpoints, with a secret of their own.
  if ('events' in object && 'url' in object) { delete object.id; delete object.createdAt; delete object.secret }
  // And reservations, with their own times.
  if ('expiresAt' in object && 'orderId' in object) { delete object.id; delete object.createdAt; delete object.expiresAt }
  delete object.updatedAt
  return object
}

// The webhook examples' host, resolved here as the public DNS would (tests have no network).
const webhookResolver = async (hostname: string) => hostname.endsWith('example.com') ? [{ address: '93.184.215.14', family: 4 }] : []

async function demoApp (t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t, { webhookResolver })
  await importCatalog(app.database, demoCatalog())
  await pollState(app)
  await app.ready()
  const document = app.swagger() as unknown as Document
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema({ $id: 'urn:storefront:docs', components: document.components })
  const compile = (schema: Json): ValidateFunction => ajv.compile(typeof schema.$ref === 'string'
    ? { $ref: `urn:storefront:docs${schema.$ref as string}` }
    : JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"urn:storefront:docs#/components/')))
  return { app, document, compile }
}

t.test('/docs is the store\'s reference, without Swagger branding', async (t) => {
  const app = await buildTestApp(t)
  let res = await app.inject({ url: '/docs' })
  let url = '/docs'
  for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) {
    url = new URL(String(res.headers.location), `http://localhost${url}`).pathname
    res = await app.inject({ url })
  }
  t.equal(res.statusCode, 200, 'the page answers')
  const html = res.body
  t.match(html, `<title>${DEFAULT_API_TITLE}</title>`, 'the page is titled with the API\'s name')
  t.equal(DEFAULT_API_TITLE, 'Storefront External API')
  // Asset paths and element ids name the UI library; what a reader sees must not.
  const visible = html.replace(/\s(href|src|id|class)="[^"]*"/g, '')
  t.notMatch(visible, /swagger/i, 'no Swagger in the page\'s own text')
  t.notMatch(html, /favicon-(16|32)x\d+\.png/, 'not the stock favicons')

  const base = new URL('./', `http://localhost${url.endsWith('/') ? url : `${url}/`}`)
  const asset = (href: string) => app.inject({ url: new URL(href, base).pathname })
  const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(html)
  t.ok(icon, 'an SVG favicon of our own')
  const favicon = await asset(icon![1]!)
  t.equal(favicon.statusCode, 200)
  t.match(favicon.headers['content-type'], /image\/svg\+xml/)
  t.match(favicon.body, /^<svg/)

  const css = /<link rel="stylesheet" type="text\/css" href="([^"]*\/theme\/[^"]+)"/.exec(html)
  t.ok(css, 'a theme stylesheet')
  t.match((await asset(css![1]!)).body, /\.download-url-wrapper\s*\{\s*display:\s*none/, 'the field to load another document is hidden')

  const initializer = /<script src="([^"]*swagger-initializer\.js)"/.exec(html)
  t.ok(initializer, 'the UI configuration script')
  const script = (await asset(initializer![1]!)).body
  const logo = /img\.src = 'data:image\/svg\+xml;base64,([^']+)'/.exec(script)
  t.ok(logo, 'the top bar shows an SVG logo')
  const logoSvg = Buffer.from(logo![1]!, 'base64').toString('utf8')
  t.match(logoSvg, /Storefront/, 'the logo is the store\'s')
  t.notMatch(logoSvg, /swagger|fastify/i)
  const stockLogo = await readFile(createRequire(import.meta.url).resolve('@fastify/swagger-ui/static/logo.svg'))
  t.notMatch(script, stockLogo.toString('base64').slice(0, 60), 'not the framework\'s logo')
})

t.test('every response of every operation is described and has examples that are true to it', async (t) => {
  const { document, compile } = await demoApp(t)
  const operations = operationsOf(document)
  t.ok(operations.length >= 7, 'the operations are in the document')

  for (const { key, operation } of operations) {
    for (const [status, response] of Object.entries(operation.responses)) {
      const where = `${key} ${status}`
      t.not(response.description, 'Default Response', `${where} is described`)
      // 304, and a webhook's 204 (deleted) and 202 (redelivery accepted): no body to show.
      if (status === '304' || status === '204' || status === '202') {
        t.equal(response.content, undefined, `${where} has no body`)
        continue
      }
      const media = bodyOf(response)
      const examples = examplesOf(media)
      t.ok(examples.length > 0, `${where} has an example`)
      const validate = compile(media!.schema!)
      for (const example of examples) t.ok(validate(example), `${where}: an example matches the schema`, { errors: validate.errors })
      if (!/^[45]/.test(status)) continue

      // One named example per code the description lists, each of that status.
      const described = [...response.description.matchAll(/`([a-z_]+)`:/g)].map((m) => m[1])
      t.same(Object.keys(media!.examples ?? {}).sort(), [...described].sort(), `${where} shows one example per code it lists`)
      for (const [name, { value }] of Object.entries(media!.examples ?? {})) {
        const { error } = value as { error: ErrorCode }
        t.equal(name, error, `${where}: the example ${name} shows its code`)
        t.equal(ERRORS[error]?.status, Number(status), `${where}: ${error} is a ${status}`)
      }
    }
  }

  const example = (path: string, method: string, status: number, code: string) =>
    document.paths[path]![method]!.responses[String(status)]!.content!['application/json']!.examples![code]?.value as Json | undefined
  for (const { path, operation } of operations.filter((o) => o.path.startsWith('/external/v1/'))) {
    const method = Object.keys(document.paths[path]!).find((m) => document.paths[path]![m] === operation)!
    t.match(example(path, method, 401, 'invalid_api_key'), { error: 'invalid_api_key' }, `${operation.operationId}: 401`)
    t.match(example(path, method, 403, 'insufficient_scope'), { error: 'insufficient_scope' }, `${operation.operationId}: 403`)
    t.match(example(path, method, 429, 'rate_limit_exceeded'), { error: 'rate_limit_exceeded' }, `${operation.operationId}: 429`)
    t.match(example(path, method, 400, 'validation_failed'), { details: [{ path: String, message: String }] }, `${operation.operationId}: a validation failure names the field`)
  }
  t.match(example('/external/v1/products/{id}', 'get', 404, 'product_not_found'), { error: 'product_not_found' })
  t.match(example('/external/v1/orders', 'post', 503, 'store_under_maintenance'), { error: 'store_under_maintenance' })
  t.match(example('/external/v1/orders', 'post', 400, 'order_creation_failed'), {
    details: [{ path: 'items[0]', reason: 'out_of_stock', message: String, available: 2 }]
  }, 'a line out of stock, with the units left')
})

t.test('every answer example of schemas/examples.ts is shown by its operation', async (t) => {
  const { document } = await demoApp(t)
  const byId = new Map(operationsOf(document).map(({ operation }) => [operation.operationId, operation]))
  for (const [operationId, examples] of Object.entries(RESPONSE_EXAMPLES)) {
    const operation = byId.get(operationId)
    t.ok(operation, `${operationId} is an operation of the document`)
    const shown = bodyOf(operation?.responses[String(successOf(operation))])?.examples ?? {}
    t.same(Object.keys(shown), Object.keys(examples), `${operationId} shows its examples`)
  }
})

/** The URL an operation's parameter examples make: every one, or the path and one query parameter. */
function exampleUrl (path: string, parameters: Parameter[], only?: Parameter) {
  const url = new URL(path.replace(/\{(\w+)\}/g, (_m, name: string) => String(parameters.find((p) => p.name === name)!.example)), 'http://localhost')
  for (const p of parameters) {
    if (p.in === 'query' && p.example !== undefined && (only === undefined || only === p)) url.searchParams.set(p.name, String(p.example))
  }
  return url.pathname + url.search
}

// A list cursor is signed with the store's own secret: no example could work in every store.
const withExample = (p: Parameter) => p.name !== 'cursor'

/** The request body examples: the media type's and its schema's, then each example of a part of the body within the first whole one. */
function bodyExamples (document: Document, operation: Operation): unknown[] {
  const media = operation.requestBody?.content['application/json']
  if (media === undefined) return []
  const schema = resolve(document, media.schema!)
  const bodies = [...examplesOf(media), ...(schema.examples ?? [])]
  for (const [property, propertySchema] of Object.entries<Json>(schema.properties ?? {})) {
    const part = propertySchema.$ref ? propertySchema : propertySchema.items?.$ref ? propertySchema.items : (propertySchema.anyOf ?? []).find((s: Json) => s.$ref)
    for (const example of part ? resolve(document, part).examples ?? [] : []) {
      bodies.push({ ...(bodies[0] as Json), [property]: propertySchema.type === 'array' ? [example] : example })
    }
  }
  return bodies
}

// Creating first: the other examples find the order it makes. Deleting last: the others find the webhook endpoint.
const rank = (method: string) => method === 'POST' ? 0 : method === 'DELETE' ? 2 : 1
const creatingFirst = (a: { method: string }, b: { method: string }) => rank(a.method) - rank(b.method)

/**
 * A webhook endpoint's id is made by the store that creates it: the examples of operations
 * on one are sent to the endpoint the create example made.
 */
function onOwnEndpoint (url: string, endpointId: string | undefined, reservationId?: string): string {
  const own = endpointId === undefined ? url : url.replace(/^(\/external\/v1\/webhooks\/)[0-9a-f-]{36}/, `$1${endpointId}`)
  // So is a reservation's.
  return reservationId === undefined ? own : own.replace(/^(\/external\/v1\/reservations\/)[0-9a-f-]{36}/, `$1${reservationId}`)
}
// A redelivery names an event the endpoint was sent: the store's own history, which no example can know.
const OWN_HISTORY = new Set(['redeliverWebhook'])

/**
 * The key each operation's examples are sent with: a live key, but a test key for the test-only
 * operations, whose examples name that key's first test order (T100001): the create example
 * makes it here, as an integrator's first test order.
 */
async function exampleKeys (app: Awaited<ReturnType<typeof demoApp>>['app'], document: Document) {
  const { key } = await makeKey(app)
  const { key: testKey } = await makeKey(app, undefined, { mode: 'test' })
  const body = resolve(document, { $ref: '#/components/schemas/CreateOrderRequest' }).examples[0]
  const first = await app.inject({ method: 'POST', url: '/external/v1/orders', headers: authHeaders(testKey), payload: body as Json })
  if (first.json<{ orderNumber: string }>().orderNumber !== 'T100001') throw new Error(`the test key's first order: ${first.body}`)
  return (operation: Operation) => operation.tags?.includes('Test mode') ? testKey : key
}

t.test('every request example works as it is against the demo catalogue', async (t) => {
  const { app, document } = await demoApp(t)
  const keyFor = await exampleKeys(app, document)

  let endpointId: string | undefined
  let reservationId: string | undefined
  for (const { key: name, method, path, operation } of operationsOf(document).sort(creatingFirst)) {
    if (OWN_HISTORY.has(operation.operationId)) continue
    const parameters = operation.parameters ?? []
    for (const parameter of parameters.filter((p) => (p.in === 'path' || p.in === 'query') && withExample(p))) {
      t.not(parameter.example, undefined, `${name}: ${parameter.in} parameter ${parameter.name} has an example`)
    }
    const bodies = bodyExamples(document, operation)
    if (operation.requestBody) t.ok(bodies.length > 0, `${name} has a body example`)
    const sends: Array<{ url: string, body?: unknown }> = bodies.length > 0 ? bodies.map((body) => ({ url: exampleUrl(path, parameters), body })) : [{ url: exampleUrl(path, parameters) }]
    for (const p of parameters.filter((p) => p.in === 'query' && p.example !== undefined)) sends.push({ url: exampleUrl(path, parameters, p) })

    const success = successOf(operation)
    for (const { url, body } of sends) {
      const res = await app.inject({ method: method as 'GET', url: onOwnEndpoint(url, endpointId, reservationId), headers: authHeaders(keyFor(operation)), ...(body === undefined ? {} : { payload: body as Json }) })
      t.equal(res.statusCode, success, `${name} ${url}${body === undefined ? '' : ` ${JSON.stringify(body)}`} answers ${success}`, { body: res.body })
      if (operation.operationId === 'createWebhook' && res.statusCode === 201) endpointId ??= res.json<{ id: string }>().id
      if (operation.operationId === 'createReservation' && res.statusCode === 201) reservationId ??= res.json<{ id: string }>().id
    }
  }
})

t.test('with every example at once, as "Try it out" sends them, an operation answers its documented example', async (t) => {
  const { app, document } = await demoApp(t)
  const keyFor = await exampleKeys(app, document)
  let endpointId: string | undefined
  let reservationId: string | undefined
  for (const { key: name, method, path, operation } of operationsOf(document).sort(creatingFirst)) {
    if (OWN_HISTORY.has(operation.operationId)) continue
    const [body] = bodyExamples(document, operation)
    const url = onOwnEndpoint(exampleUrl(path, operation.parameters ?? []), endpointId, reservationId)
    const res = await app.inject({ method: method as 'GET', url, headers: authHeaders(keyFor(operation)), ...(body === undefined ? {} : { payload: body as Json }) })
    const success = successOf(operation)
    t.equal(res.statusCode, success, `${name} answers ${success}`)
    if (operation.operationId === 'createWebhook' && res.statusCode === 201) endpointId = res.json<{ id: string }>().id
    if (operation.operationId === 'createReservation' && res.statusCode === 201) reservationId = res.json<{ id: string }>().id
    // The feed's and the deliveries' answers are the store's own history (and depend on when they are read).
    if (operation.operationId === 'listChanges' || operation.operationId === 'listWebhookDeliveries') continue
    if (operation.responses[String(success)]!.content === undefined) continue
    const media = bodyOf(operation.responses[String(success)])
    if (media === operation.responses[String(success)]!.content![NDJSON]) {
      // An export's examples are its lines, in order (its feed cursor is the store's own).
      const lines = res.body.trimEnd().split('\n').map((line) => JSON.parse(line) as Json)
      const withoutCursor = (line: unknown) => { const { exportEnd, ...rest } = line as Json; return exportEnd ? { exportEnd: { ...exportEnd, changesCursor: 'evt' } } : rest }
      t.same(lines.map(withoutCursor).map(withoutVolatile), examplesOf(media).map(withoutCursor).map(withoutVolatile), `${name}: the documented lines are the real ones`)
      continue
    }
    const [documented] = examplesOf(media)
    t.same(withoutVolatile(res.json()), withoutVolatile(documented), `${name}: the documented answer is the real one`)
  }
})

t.test('the declared headers are the ones sent', async (t) => {
  const { app, document, compile } = await demoApp(t)
  const { key } = await makeKey(app)
  const { key: listOnly } = await makeKey(app, ['products:list'])
  const { key: once } = await makeKey(app, undefined, { rateLimit: 1 })
  const body = resolve(document, { $ref: '#/components/schemas/CreateOrderRequest' }).examples[0]
  // Not part of the contract: transport, and a browser hardening header.
  const UNDOCUMENTED = new Set(['content-type', 'content-length', 'transfer-encoding', 'date', 'connection', 'keep-alive', 'x-content-type-options'])

  const check = async (what: string, path: string, method: string, request: InjectOptions, conditional: string[] = []) => {
    const res = await app.inject(request)
    const response = document.paths[path]![method]!.responses[String(res.statusCode)]
    if (response === undefined) {
      t.fail(`${what}: ${res.statusCode} is documented`)
      return res
    }
    const declared = Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), resolve(document, header)]))
    for (const [name, header] of Object.entries(declared)) {
      const value = res.headers[name]
      if (value === undefined) {
        t.ok(conditional.includes(name), `${what}: ${name} is sent`)
        continue
      }
      const validate = compile(header.schema)
      const typed = header.schema.type === 'integer' ? Number(value) : value
      t.ok(validate(typed), `${what}: ${name}: ${String(value)} matches its schema`, { errors: validate.errors })
    }
    const undeclared = Object.keys(res.headers).filter((name) => !UNDOCUMENTED.has(name) && !(name in declared))
    t.same(undeclared, [], `${what}: every header sent is declared`)
    return res
  }

  const products = '/external/v1/products'
  const orders = '/external/v1/orders'
  const listed = await check('a 200 list of products', products, 'get', { url: products, headers: authHeaders(key) })
  t.equal(listed.statusCode, 200)
  t.match(listed.headers, { 'request-id': /./, 'ratelimit-limit': /^\d+$/, 'ratelimit-remaining': /^\d+$/, 'ratelimit-reset': /^\d+$/, ratelimit: /per-key/, 'ratelimit-policy': /per-key/ })
  await check('a 200 product', `${products}/{id}`, 'get', { url: `${products}/d3e00000-0000-4000-8000-000000000020`, headers: authHeaders(key) })
  await check('a 404 product', `${products}/{id}`, 'get', { url: `${products}/${crypto.randomUUID()}`, headers: authHeaders(key) })
  await check('a 400 list', products, 'get', { url: `${products}?page=x`, headers: authHeaders(key) })
  await check('a 401', products, 'get', { url: products })
  await check('a 403', orders, 'get', { url: orders, headers: authHeaders(listOnly) })
  await app.inject({ url: products, headers: authHeaders(once) })
  const limited = await check('a 429', products, 'get', { url: products, headers: authHeaders(once) })
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['retry-after'], /^\d+$/)

  const post = { method: 'POST' as const, url: orders, headers: { ...authHeaders(key), 'idempotency-key': crypto.randomUUID() }, payload: body }
  const created = await check('a 201 order', orders, 'post', post, ['idempotent-replayed'])
  t.equal(created.statusCode, 201)
  t.match(created.headers, { location: new RegExp(`/external/v1/orders/${created.json().id as string}$`), 'cache-control': 'no-store' })
  const replayed = await check('a replayed 201', orders, 'post', post)
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  await check('a 200 order', `${orders}/{orderNumberOrId}`, 'get', { url: `${orders}/${created.json().orderNumber as string}`, headers: authHeaders(key) })
  await check('a 200 list of orders', orders, 'get', { url: orders, headers: authHeaders(key) })
  const exported = await check('a 200 export of products', `${products}/export`, 'get', { url: `${products}/export`, headers: authHeaders(key) })
  t.match(exported.headers, { 'changes-cursor': /^evt_\d+$/, 'cache-control': 'no-store' })
  await check('a 200 export of orders', `${orders}/export`, 'get', { url: `${orders}/export`, headers: authHeaders(key) })
  await check('a 400 export', `${products}/export`, 'get', { url: `${products}/export?page=2`, headers: authHeaders(key) })
  await check('a 415', orders, 'post', { method: 'POST', url: orders, headers: { ...authHeaders(key), 'content-type': 'text/plain' }, payload: 'x' })

  await writeSetting(app.database.db, 'maintenance', true)
  await pollState(app)
  const closed = await check('a 503 in maintenance', orders, 'post', { method: 'POST', url: orders, headers: authHeaders(key), payload: body })
  t.equal(closed.statusCode, 503)
  t.match(closed.headers['retry-after'], /^\d+$/)
  await writeSetting(app.database.db, 'maintenance', false)
  await pollState(app)

  const health = await check('/healthz', '/healthz', 'get', { url: '/healthz' })
  t.notOk('ratelimit-limit' in health.headers, 'the service endpoints are not rate limited')
  await check('/readyz', '/readyz', 'get', { url: '/readyz' })
})
