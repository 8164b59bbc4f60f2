// The OpenAPI document: openapi.yaml matches the code, passes Redocly's linter, describes
// every external operation fully, is served without a key, and tells the truth
// about real responses.
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import t from 'tap'
import { parse } from 'yaml'
import { ERRORS } from '../../errors.ts'
import { OPENAPI_FILE, generateOpenApiYaml, openApiYamlOf } from '../../scripts/openapi-document.ts'
import { MAX_ENDPOINTS_PER_KEY } from '../../schemas/webhooks.ts'
import { SECRET_OVERLAP_MS } from '../../services/webhooks/endpoints.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct } from '../helper.ts'

const REDOCLY_CONFIG = fileURLToPath(new URL('../../redocly.yaml', import.meta.url))

interface Operation {
  operationId?: string
  security?: unknown[]
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>
}
interface Document {
  components: { schemas: Record<string, unknown>, securitySchemes: Record<string, Record<string, unknown>> }
  paths: Record<string, Record<string, Operation>>
  security?: Array<Record<string, unknown[]>>
  servers?: unknown
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options'])

function operations (document: Document) {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => METHODS.has(method))
    .map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, path, operation })))
}

// What every /external/v1 operation can answer whatever it does.
const COMMON_STATUSES = ['401', '403', '408', '429', '431', '500', '503']

// Each endpoint of the spec with its own statuses. An endpoint added
// beyond these must still list a 2XX and the common statuses.
const OWN_STATUSES: Record<string, string[]> = {
  'GET /external/v1/products': ['200', '400'],
  'GET /external/v1/products/{id}': ['200', '400', '404'],
  'POST /external/v1/orders': ['201', '400', '409', '413', '415', '422'],
  'GET /external/v1/orders': ['200', '400'],
  'GET /external/v1/orders/{orderNumberOrId}': ['200', '404']
}

// Built once: the document as `npm run openapi` makes it.
let generated: Promise<string> | undefined
const generatedYaml = () => (generated ??= generateOpenApiYaml())

t.test('openapi.yaml is what the app generates', async (t) => {
  const expected = await generatedYaml()
  const committed = await readFile(OPENAPI_FILE, 'utf8').catch(() => '')
  t.equal(committed, expected, 'openapi.yaml is out of date with the route schemas: run `npm run openapi` and commit openapi.yaml')
})

t.test('the document passes the Redocly linter (recommended rules, redocly.yaml)', async (t) => {
  const config = await createConfig(await readFile(REDOCLY_CONFIG, 'utf8'), { configPath: REDOCLY_CONFIG })
  const problems = await lintFromString({ source: await generatedYaml(), absoluteRef: OPENAPI_FILE, config })
  const describe = (p: typeof problems[number]) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`
  for (const warning of problems.filter((p) => p.severity !== 'error')) t.comment(`lint warning ${describe(warning)}`)
  t.same(problems.filter((p) => p.severity === 'error').map(describe), [], 'no lint errors')
})

t.test('the document describes every external operation completely', async (t) => {
  const document = parse(await generatedYaml()) as Document
  const external = operations(document).filter((o) => o.path.startsWith('/external/v1/'))
  t.ok(external.length >= 2, 'the external operations are in the document')

  t.match(document.components.securitySchemes, {
    ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
    ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization' }
  }, 'both ways of sending a key are security schemes')
  t.same(document.security, [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }], 'either scheme authenticates by default')
  t.notOk('servers' in document, 'openapi.yaml has no servers')

  const schemaNames = Object.keys(document.components.schemas)
  t.same(schemaNames.filter((name) => /^def-\d+$/.test(name)), [], 'no component is named def-N')
  for (const name of ['Error', 'Product', 'ProductPage', 'Variant', 'VariantOption', 'Combination']) {
    t.ok(schemaNames.includes(name), `component ${name} exists`)
  }

  for (const { key, operation } of external) {
    const statuses = Object.keys(operation.responses)
    const wanted = [...COMMON_STATUSES, ...(OWN_STATUSES[key] ?? [])]
    t.same(wanted.filter((s) => !statuses.includes(s)), [], `${key} lists ${wanted.join(', ')}`)
    t.ok(statuses.some((s) => /^2\d\d$/.test(s)), `${key} lists a success`)
    t.ok(operation.operationId, `${key} has an operationId`)
    t.not(operation.security?.length, 0, `${key} does not waive authentication`)
    const bodies = Object.entries(operation.responses).flatMap(([status, response]) => {
      const schema = response.content?.['application/json']?.schema
      return schema === undefined ? [] : [{ status, ref: schema.$ref }]
    })
    t.same(bodies.filter((b) => !/^#\/components\/schemas\/[A-Z]\w*$/.test(b.ref ?? '')).map((b) => b.status), [],
      `${key} answers named components`)
    t.same(bodies.filter((b) => /^[45]/.test(b.status) && b.ref !== '#/components/schemas/Error').map((b) => b.status), [],
      `${key} answers the Error body on every error`)
  }
  const present = new Set(external.map((o) => o.key))
  t.same(Object.keys(OWN_STATUSES).filter((key) => !present.has(key)), [], 'every endpoint of the spec is in the document')
})

t.test('the title and the contact are the operator\'s; no placeholder ships', async (t) => {
  const committed = await readFile(OPENAPI_FILE, 'utf8')
  const document = parse(committed) as { info: Record<string, unknown> }
  t.equal(document.info.title, 'Storefront External API', 'the default title')
  t.notOk('contact' in document.info, 'no contact unless the operator gives one')
  t.notMatch(committed, /integrations@example\.com/, 'the old placeholder address is gone')

  const app = await buildTestApp(t, { env: { API_TITLE: 'Acme & Co <Partner API>', API_CONTACT_EMAIL: 'api@acme.example', API_CONTACT_URL: 'https://acme.example/partners' } })
  const served = (await app.inject({ url: '/openapi.json' })).json() as { info: Record<string, unknown> }
  t.equal(served.info.title, 'Acme & Co <Partner API>')
  t.same(served.info.contact, { name: 'Integration support', email: 'api@acme.example', url: 'https://acme.example/partners' })
  let res = await app.inject({ url: '/docs' })
  for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops++) res = await app.inject({ url: new URL(String(res.headers.location), 'http://localhost/docs/').pathname })
  t.match(res.body, '<title>Acme &#38; Co &#60;Partner API&#62;</title>', 'the page is titled with it, as text')

  const emailOnly = await buildTestApp(t, { database: app.database, env: { API_CONTACT_EMAIL: 'api@acme.example' } })
  t.same(((await emailOnly.inject({ url: '/openapi.json' })).json() as { info: Record<string, unknown> }).info.contact, { name: 'Integration support', email: 'api@acme.example' })
})

t.test('the document and the reference are served without a key', async (t) => {
  const app = await buildTestApp(t, { env: { PUBLIC_BASE_URL: 'https://shop.example.com/api' } })
  const json = await app.inject({ url: '/openapi.json' })
  t.equal(json.statusCode, 200, '/openapi.json')
  t.match(json.headers['content-type'], /^application\/json/)
  const yaml = await app.inject({ url: '/openapi.yaml' })
  t.equal(yaml.statusCode, 200, '/openapi.yaml')
  t.match(yaml.headers['content-type'], /yaml/)
  const docs = await app.inject({ url: '/docs' })
  t.equal(docs.statusCode, 200, '/docs')
  t.match(docs.headers['content-type'], /^text\/html/)

  // The served document is the committed one plus the operator's servers.
  const served = json.json() as Document
  t.same(served.servers, [{ url: 'https://shop.example.com/api' }])
  t.same(parse(yaml.body), served, '/openapi.yaml and /openapi.json are the same document')
  const { servers: _servers, ...rest } = served
  t.same(rest, parse(await generatedYaml()), 'without servers it is openapi.yaml')
})

// Texts that state a configurable value read it from the instance's configuration; the
// committed openapi.yaml is the defaults' wording.
t.test('the served document states this instance\'s configured values', async (t) => {
  const app = await buildTestApp(t, {
    env: { IDEMPOTENCY_TTL_HOURS: '48', WEBHOOK_TIMEOUT_MS: '2500', WEBHOOK_RETRY_SCHEDULE: '30, 90,5400', CHANGES_RETENTION_DAYS: '7', READ_SETTLE_MS: '4000', WEBHOOK_LEASE_MS: '60000' }
  })
  const text = (await app.inject({ url: '/openapi.json' })).body
  const served = JSON.parse(text) as Document & { webhooks: Record<string, { post: { description: string, responses: Record<string, { description: string }> } }> }
  const createOrder = served.paths['/external/v1/orders']!.post as unknown as { description: string, parameters: Array<{ name: string, description: string }> }
  t.match(createOrder.description, 'the same key and body within 48 hours replays the first response')
  t.match(createOrder.parameters.find((p) => p.name === 'idempotency-key')!.description, 'replay the first response for 48 hours')
  t.notMatch(text, /within 24 hours|for 24 hours/, 'no trace of the default lifetime')
  const changes = served.paths['/external/v1/changes']!.get as unknown as { description: string }
  t.match(changes.description, 'Events are kept 7 days: an older cursor answers 410')
  t.match(changes.description, 'A change shows here about 4 seconds after it commits')
  const delivery = served.webhooks.changeEvent!.post
  t.match(delivery.description, 'Answer 2xx within 2.5 seconds; anything else is retried after about 30 s, 1.5 min and 1.5 h')
  t.match(delivery.description, `During the ${SECRET_OVERLAP_MS / 3_600_000} hours after a rotation`)
  t.match(delivery.responses['200']!.description, 'Any 2xx within 2.5 seconds')
  t.match(delivery.responses.default!.description, 'no answer within 2.5 seconds')
  const webhooks = served.paths['/external/v1/webhooks']!
  t.match((webhooks.post as unknown as { description: string }).description, `At most ${MAX_ENDPOINTS_PER_KEY} endpoints a key`)
  t.match((webhooks.get as unknown as { description: string }).description, `(at most ${MAX_ENDPOINTS_PER_KEY})`)
  t.match(ERRORS.webhook_limit_reached.message, `(${MAX_ENDPOINTS_PER_KEY})`, 'the limit\'s message names the limit the check holds to')
})

t.test('real responses match the document (contract)', async (t) => {
  const app = await buildTestApp(t)
  await app.ready()
  const document = app.swagger() as unknown as Document
  t.equal(openApiYamlOf(app), await generatedYaml(), 'the app under test serves the generated document')

  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  const DOCUMENT_ID = 'urn:storefront:openapi'
  ajv.addSchema({ $id: DOCUMENT_ID, components: document.components })
  /** The validator of what the document says `METHOD path` answers with `status`. */
  const validatorFor = (method: string, path: string, status: number): ValidateFunction => {
    const ref = document.paths[path]?.[method]?.responses[String(status)]?.content?.['application/json']?.schema?.$ref
    if (ref === undefined) throw new Error(`the document has no JSON body for ${method} ${path} ${status}`)
    return ajv.compile({ $ref: `${DOCUMENT_ID}${ref}` })
  }
  const matches = (validate: ValidateFunction, body: unknown, what: string) => {
    const ok = validate(body)
    t.ok(ok, `${what} matches the document`, { errors: ajv.errorsText(validate.errors), body })
  }

  const { key } = await makeKey(app)
  const plain = makeProduct({ name: 'Contract mug', barcode: '5901234123457', quantity: null, discount: { type: 'percentage', value: 15, startsAt: null, endsAt: null } })
  const options = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
  const variantIds = [crypto.randomUUID(), crypto.randomUUID()]
  const withCombinations = makeProduct({
    name: 'Contract tee',
    quantity: undefined,
    imageUrl: 'https://cdn.example.com/tee.jpg',
    variants: [
      { id: variantIds[0]!, name: 'Color', options: [{ id: options[0]!, name: 'Black' }, { id: options[1]!, name: 'White' }] },
      { id: variantIds[1]!, name: 'Size', options: [{ id: options[2]!, name: 'M' }] }
    ],
    combinations: [
      { id: crypto.randomUUID(), optionIds: [options[0]!, options[2]!], sku: 'TEE-BLK-M', barcode: null, quantity: 3, price: 20, isAvailable: true },
      { id: crypto.randomUUID(), optionIds: [options[1]!, options[2]!], price: 21.5, quantity: null, isAvailable: false, discount: { type: 'amount', value: 2, startsAt: null, endsAt: null } }
    ]
  })
  await importProducts(app, [plain, withCombinations])

  const getProduct = '/external/v1/products/{id}'
  for (const product of [plain, withCombinations]) {
    const res = await app.inject({ url: `/external/v1/products/${product.id}`, headers: authHeaders(key) })
    t.equal(res.statusCode, 200)
    matches(validatorFor('get', getProduct, 200), res.json(), `product ${product.name}`)
  }
  const tee = (await app.inject({ url: `/external/v1/products/${withCombinations.id}`, headers: authHeaders(key) })).json()
  t.equal(tee.combinations.length, 2, 'the combinations are exercised')

  const page = await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })
  t.equal(page.statusCode, 200)
  t.equal(page.json().items.length, 2)
  matches(validatorFor('get', '/external/v1/products', 200), page.json(), 'a page of products')
  const empty = await app.inject({ url: '/external/v1/products?page=9', headers: authHeaders(key) })
  matches(validatorFor('get', '/external/v1/products', 200), empty.json(), 'a page past the end')

  const missing = await app.inject({ url: `/external/v1/products/${crypto.randomUUID()}`, headers: authHeaders(key) })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().error, 'product_not_found')
  matches(validatorFor('get', getProduct, 404), missing.json(), 'a 404 body')

  const badId = await app.inject({ url: '/external/v1/products/not-a-guid', headers: authHeaders(key) })
  t.equal(badId.statusCode, 400)
  matches(validatorFor('get', getProduct, 400), badId.json(), 'a 400 body')

  const invalid = await app.inject({ url: '/external/v1/products?page=abc', headers: authHeaders(key) })
  t.equal(invalid.statusCode, 400)
  t.ok(Array.isArray(invalid.json().details), 'a validation error has details')
  matches(validatorFor('get', '/external/v1/products', 400), invalid.json(), 'a validation_failed body')

  const anonymous = await app.inject({ url: '/external/v1/products' })
  t.equal(anonymous.statusCode, 401)
  matches(validatorFor('get', '/external/v1/products', 401), anonymous.json(), 'a 401 body')

  const { key: findOnly } = await makeKey(app, ['products:find'])
  const forbidden = await app.inject({ url: '/external/v1/products', headers: authHeaders(findOnly) })
  t.equal(forbidden.statusCode, 403)
  matches(validatorFor('get', '/external/v1/products', 403), forbidden.json(), 'a 403 body')

  // The check bites: a body that drifts from the document is caught.
  const validateProduct = validatorFor('get', getProduct, 200)
  t.notOk(validateProduct({ ...tee, internalCost: 1 }), 'an undocumented field fails')
  const { sellPrice: _sellPrice, ...withoutSellPrice } = tee
  t.notOk(validateProduct(withoutSellPrice), 'a missing field fails')
  t.notOk(validateProduct({ ...tee, price: '20.00' }), 'a price as a string fails')
})
