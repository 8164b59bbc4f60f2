// Property-based fuzzing of every operation in openapi.yaml, with requests drawn from the
// document's own schemas: valid values (so requests also reach the database), boundaries,
// wrong types, hostile text and numbers, mutated JSON, and every way of sending a key.
// Whatever is sent, the API must not fail (no 5xx), must answer errors with the Error body,
// and must answer what the document declares. A run is reproducible from its seed.
//
// FUZZ_SEED fixes the generator (a default one otherwise); FUZZ_RUNS is the number of
// generated requests per operation.
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { generateSecret } from '../../lib/api-key-secret.ts'
import { checkResponse, openApi, resolveRef, type JsonSchema, type Operation } from '../contract.ts'
import { buildTestApp, importProducts, makeKey, makeProduct } from '../helper.ts'
import { rawRequest } from '../raw-http.ts'

const DEFAULT_SEED = 20261123
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : DEFAULT_SEED
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 150
// Requests spent shrinking one failure; past it the smallest request found so far stands.
const SHRINK_BUDGET = 150
// New failures looked for per operation after the first; each one restarts the generator.
const MAX_ROUNDS = 80

if (!Number.isSafeInteger(SEED)) throw new Error(`FUZZ_SEED must be an integer, got ${process.env.FUZZ_SEED}`)
if (!Number.isSafeInteger(RUNS) || RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}`)

/** A JSON number token written as is: JSON.stringify cannot produce 1e400 or 45 nines. */
class RawNumber {
  constructor (readonly token: string) {}
}

/** A value and what it is, so failures of the same kind are reported once. */
interface Sample { value: unknown, kind: string }

interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
  remoteAddress: string
  /** What was done to an otherwise valid request: `valid`, or `slot=kind`. */
  mutation: string
}

interface Outcome { statusCode: number, headers: Record<string, unknown>, body: string }

// ---------------------------------------------------------------------------------------------
// Text: what a URL or a header can carry.

const HUGE = 20_000

const HOSTILE_TEXT: Array<[string, string]> = [
  ['nul', 'nul\u0000'],
  ['nul-only', '\u0000'],
  ['nul-pair', 'nul\u0000\u0000'],
  ['lone-high-surrogate', '\uD800'],
  ['lone-low-surrogate', 'a\uDC00b'],
  ['emoji', '🛒🔥👩‍👩‍👧'],
  ['huge', 'x'.repeat(HUGE)],
  ['nines45', '9'.repeat(45)],
  ['ones75', '1'.repeat(75)],
  ['1e400', '1e400'],
  ['Infinity', 'Infinity'],
  ['-Infinity', '-Infinity'],
  ['-0', '-0'],
  ['NaN', 'NaN'],
  ['empty', ''],
  ['blank', '   '],
  ['hex', '0x1F'],
  ['fraction', '1.5'],
  ['exponent', '1e3'],
  ['negative', '-1'],
  ['int32-max', '2147483647'],
  ['int32-max+1', '2147483648'],
  ['int64-max+1', '9223372036854775808'],
  ['sql', "' or 1=1 --"],
  ['like-wildcards', '%_\\'],
  ['control', 'a\tb\r\nc'],
  ['bom', '\uFEFF1'],
  ['rtl', '\u202Eabc'],
  ['json', '{"a":[1]}']
]

// Instants at and beyond the ends of the range every timestamp is held to (0001 to 9999),
// also where an offset carries a time across an end.
const TIMESTAMP_EDGES: Sample[] = [
  ['first-instant', '0001-01-01T00:00:00Z'],
  ['first-instant-west', '0001-01-01T00:00:00-01:00'],
  ['year-0', '0000-01-01T00:00:00Z'],
  ['year-0-last-second', '0000-12-31T23:59:59Z'],
  ['year-1-east', '0001-01-01T00:00:00+01:00'],
  ['year-1-east-max-offset', '0001-01-01T23:59:59+23:59'],
  ['last-instant', '9999-12-31T23:59:59Z'],
  ['last-instant-east', '9999-12-31T23:59:59+01:00'],
  ['last-second-fraction', '9999-12-31T23:59:59.999Z'],
  ['year-9999-west', '9999-12-31T23:59:59-00:01'],
  ['leap-second-at-end', '9999-12-31T23:59:60Z'],
  ['year-10000', '10000-01-01T00:00:00Z'],
  ['expanded-year', '+010000-01-01T00:00:00Z'],
  ['negative-year', '-000001-01-01T00:00:00Z'],
  ['lower-case', '2026-01-01t00:00:00z'],
  ['space-separated', '2026-01-01 00:00:00+00:00'],
  ['tab-separated', '2026-01-01\t00:00:00Z'],
  ['offset-hours-only-year-1', '0001-01-01T00:00:00+01'],
  ['offset-beyond-postgres', '2026-01-01T00:00:00+16:00']
].map(([kind, value]) => ({ kind: `date-time:${kind!}`, value }))

// Number-like text: what a query parameter typed integer meets in the wild.
const NUMERIC_TEXT = new Set(['nines45', 'ones75', '1e400', 'Infinity', '-Infinity', '-0', 'NaN', 'empty', 'blank', 'hex', 'fraction', 'exponent', 'negative', 'int32-max', 'int32-max+1', 'int64-max+1'])

const hostileText: fc.Arbitrary<Sample> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_TEXT).map(([kind, value]) => ({ kind, value })) },
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 })).map(([a, b]) => ({ kind: 'nul-inside', value: `${a}\u0000${b}` })) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }).map((value) => ({ kind: value.includes('\u0000') ? 'nul-inside' : 'unicode', value })) },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 4 }).map((value) => ({ kind: 'surrogates', value })) }
)

/** Percent-encodes UTF-8, writing a lone surrogate as the three bytes a careless client would send. */
function percentEncode (text: string): string {
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const char = text[i]!
    if (/[A-Za-z0-9\-._~]/.test(char)) {
      out += char
      continue
    }
    let bytes: number[]
    const next = text.charCodeAt(i + 1)
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      bytes = [...Buffer.from(text.slice(i, i + 2), 'utf8')]
      i++
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
    } else {
      bytes = [...Buffer.from(char, 'utf8')]
    }
    out += bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')
  }
  return out
}

// HTTP carries header values as bytes: what a client sends as UTF-8 arrives as Latin-1, and
// the HTTP parser rejects control characters and oversized headers before the app sees them.
function asHeaderValue (text: string): string {
  const bytes = Buffer.from(text.slice(0, 8000), 'utf8').toString('latin1')
  return [...bytes].filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f')).join('')
}

// ---------------------------------------------------------------------------------------------
// Values from schemas.

interface Hints {
  /** Real values for a property or parameter name, so valid requests find real rows. */
  byName: Record<string, fc.Arbitrary<unknown>>
}

const NUMERIC_TYPES = new Set(['integer', 'number'])

function typesOf (schema: JsonSchema): string[] {
  const type = schema.type
  if (Array.isArray(type)) return type as string[]
  if (typeof type === 'string') return [type]
  if (schema.properties) return ['object']
  return []
}

function branches (schema: JsonSchema): JsonSchema[] | undefined {
  const list = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined
  return list?.map(resolveRef)
}

/** A value the schema accepts. */
function validValue (input: JsonSchema, hints: Hints, name?: string): fc.Arbitrary<unknown> {
  const schema = resolveRef(input)
  const fromSchema = validBySchema(schema, hints)
  const hinted = name === undefined ? undefined : hints.byName[name]
  return hinted ? fc.oneof({ weight: 9, arbitrary: hinted }, { weight: 1, arbitrary: fromSchema }) : fromSchema
}

function validBySchema (schema: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  const options = branches(schema)
  if (options) return fc.oneof(...options.map((branch) => validValue(branch, hints)))
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  if ('const' in schema) return fc.constant(schema.const)
  const type = typesOf(schema)[0]
  switch (type) {
    case 'null':
      return fc.constant(null)
    case 'boolean':
      return fc.boolean()
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -1000
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000
      return fc.oneof({ weight: 3, arbitrary: fc.integer({ min: Math.max(min, -1000), max: Math.min(max, Math.max(min, -1000) + 1000) }) },
        { weight: 1, arbitrary: fc.integer({ min, max }) }, { weight: 1, arbitrary: fc.constantFrom(min, max) })
    }
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -1e6
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1e6
      return fc.oneof(fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), fc.constantFrom(min, max, 0))
    }
    case 'string':
      return validString(schema)
    case 'array': {
      const item = validValue((schema.items ?? {}) as JsonSchema, hints)
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0
      const maxLength = Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 4, minLength + 3)
      return fc.array(item, { minLength, maxLength })
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
      const model = Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, validValue(value, hints, key)]))
      return fc.record(model, { requiredKeys: (schema.required ?? []) as string[] })
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

function validString (schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid()
  if (schema.format === 'date-time') {
    return fc.oneof({ weight: 9, arbitrary: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()) },
      { weight: 1, arbitrary: fc.constantFrom('0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '0001-01-01T00:00:00-14:00') })
  }
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : undefined
  const ordinary = fc.string({ minLength, maxLength: Math.min(maxLength ?? 30, Math.max(minLength, 30)) })
  if (maxLength === undefined) return ordinary
  return fc.oneof({ weight: 4, arbitrary: ordinary }, { weight: 1, arbitrary: fc.constant('m'.repeat(maxLength)) })
}

// The hostile text every string slot is swept with (the random runs draw from all of it).
const SWEPT_TEXT = new Set(['nul', 'nul-pair', 'lone-high-surrogate', 'lone-low-surrogate', 'emoji', 'huge', 'empty', 'control', 'bom'])

interface Hostile {
  /** Edge values each tried once per slot, in order. */
  sweep: Sample[]
  /** What random runs draw from: the edges and generated hostile text. */
  arbitrary: fc.Arbitrary<Sample>
}

/** Values just outside the schema, values of other types, and hostile ones. */
function hostileValue (input: JsonSchema): Hostile {
  const schema = resolveRef(input)
  const options = branches(schema) ?? [schema]
  const types = new Set(options.flatMap(typesOf))
  const samples: Sample[] = []
  for (const option of options) {
    if (typeof option.maxLength === 'number') samples.push({ kind: 'maxLength+1', value: 'm'.repeat(option.maxLength + 1) })
    if (typeof option.minLength === 'number' && option.minLength > 0) samples.push({ kind: 'minLength-1', value: 'm'.repeat(option.minLength - 1) })
    if (typeof option.minimum === 'number') samples.push({ kind: 'minimum-1', value: option.minimum - 1 })
    if (typeof option.maximum === 'number') samples.push({ kind: 'maximum+1', value: option.maximum + 1 })
    if (typeof option.minItems === 'number' && option.minItems > 0) samples.push({ kind: 'minItems-1', value: [] })
    if (typeof option.maxItems === 'number') samples.push({ kind: 'maxItems+1', value: Array.from({ length: option.maxItems + 1 }, () => ({})) })
    if (Array.isArray(option.enum)) samples.push({ kind: 'not-in-enum', value: `${String(option.enum[0])}x` })
    if (option.format === 'uuid') samples.push({ kind: 'not-a-uuid', value: 'c0ffee00-0000-4000-8000-00000000000' }, { kind: 'braced-uuid', value: '{c0ffee00-0000-4000-8000-000000000001}' })
    if (option.format === 'date-time') samples.push(...TIMESTAMP_EDGES)
  }
  if (types.has('integer')) samples.push({ kind: 'fraction', value: 1.5 })
  const wrongTypes: Sample[] = [
    { kind: 'wrong-type:string', value: '1' },
    { kind: 'wrong-type:number', value: 7 },
    { kind: 'wrong-type:boolean', value: true },
    { kind: 'wrong-type:object', value: { a: 1 } },
    { kind: 'wrong-type:array', value: ['a'] },
    { kind: 'wrong-type:null', value: null }
  ].filter((s) => !types.has(s.kind.slice('wrong-type:'.length)) && !(s.kind === 'wrong-type:number' && types.has('integer')))
  samples.push(...wrongTypes)
  const texts = HOSTILE_TEXT.map(([kind, value]) => ({ kind, value }))
  if ([...types].some((type) => NUMERIC_TYPES.has(type))) {
    const numbers: Sample[] = [
      { kind: 'number:nines45', value: new RawNumber('9'.repeat(45)) },
      { kind: 'number:1e400', value: new RawNumber('1e400') },
      { kind: 'number:-1e400', value: new RawNumber('-1e400') },
      { kind: 'number:-0', value: new RawNumber('-0') },
      { kind: 'number:2^53+1', value: new RawNumber('9007199254740993') },
      { kind: 'number:tiny', value: new RawNumber('1e-400') },
      { kind: 'number:long-fraction', value: new RawNumber(`1.${'0'.repeat(400)}1`) }
    ]
    const numericText = texts.filter((s) => NUMERIC_TEXT.has(s.kind))
    const sweep = [...samples, ...numbers, ...numericText, ...texts.filter((s) => SWEPT_TEXT.has(s.kind) && !NUMERIC_TEXT.has(s.kind))]
    return { sweep, arbitrary: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...samples, ...numbers, ...numericText) }, { weight: 1, arbitrary: hostileText }) }
  }
  const sweep = [...samples, ...texts.filter((s) => SWEPT_TEXT.has(s.kind))]
  return {
    sweep,
    arbitrary: types.has('string')
      ? fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...samples) }, { weight: 3, arbitrary: hostileText })
      : fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...samples) }, { weight: 1, arbitrary: hostileText })
  }
}

/** The text form of a query, path or header value. */
function asText (value: unknown): string {
  if (value instanceof RawNumber) return value.token
  if (typeof value === 'string') return value
  return JSON.stringify(value)
}

/** Text just outside a parameter's schema, and hostile text. */
function hostileParameterText (schema: JsonSchema): Hostile {
  const { sweep, arbitrary } = hostileValue(schema)
  const asTextSample = (s: Sample) => ({ kind: s.kind.replace(/^number:/, ''), value: asText(s.value) })
  // In a URL a number and its text are the same thing: each is sent once.
  const unique = new Map(sweep.map(asTextSample).map((s) => [s.value as string, s]))
  return { sweep: [...unique.values()], arbitrary: arbitrary.map(asTextSample) }
}

function toJson (value: unknown): string {
  if (value instanceof RawNumber) return value.token
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

// ---------------------------------------------------------------------------------------------
// Body slots: every property of the request body, reachable by a path.

interface BodySlot { path: Array<string | number>, schema: JsonSchema }

function bodySlots (input: JsonSchema, path: Array<string | number> = [], depth = 0): BodySlot[] {
  const schema = resolveRef(input)
  const slots: BodySlot[] = [{ path, schema: input }]
  if (depth > 4) return slots
  const concrete = (branches(schema) ?? [schema]).filter((s) => !typesOf(s).includes('null'))
  for (const option of concrete) {
    if (option.properties) {
      for (const [key, child] of Object.entries(option.properties as Record<string, JsonSchema>)) slots.push(...bodySlots(child, [...path, key], depth + 1))
    }
    if (option.items) slots.push(...bodySlots(option.items as JsonSchema, [...path, 0], depth + 1))
  }
  return slots
}

const slotName = (path: Array<string | number>) => path.reduce<string>((name, part) => typeof part === 'number' ? `${name}[${part}]` : name ? `${name}.${part}` : part, '') || '(body)'

function setAt (root: unknown, path: Array<string | number>, value: unknown): unknown {
  if (path.length === 0) return value
  const [head, ...rest] = path
  const container: Record<string | number, unknown> | unknown[] = typeof head === 'number'
    ? (Array.isArray(root) ? [...root] : [])
    : (typeof root === 'object' && root !== null && !Array.isArray(root) ? { ...root } : {})
  const current = (container as Record<string | number, unknown>)[head!]
  ;(container as Record<string | number, unknown>)[head!] = setAt(current, rest, value)
  return container
}

// ---------------------------------------------------------------------------------------------
// Raw JSON mutations.

const RAW_BODIES: Array<[string, (json: string, cut: number) => string | Buffer]> = [
  ['truncated', (json, cut) => json.slice(0, Math.max(1, Math.floor(json.length * cut)))],
  ['trailing-garbage', (json) => `${json} x`],
  ['trailing-brace', (json) => `${json}}`],
  ['trailing-nul', (json) => `${json}\u0000`],
  ['two-documents', (json) => `${json}${json}`],
  ['top-level-array', (json) => `[${json}]`],
  ['top-level-string', () => '"order"'],
  ['top-level-number', () => '42'],
  ['top-level-null', () => 'null'],
  ['top-level-true', () => 'true'],
  ['empty', () => ''],
  ['whitespace', () => ' \n '],
  ['bom', (json) => `\uFEFF${json}`],
  ['deep-array', () => `${'['.repeat(50_000)}${']'.repeat(50_000)}`],
  ['deep-object', () => `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`],
  ['deep-in-field', (json) => json.replace(/^\{/, `{"note":${'['.repeat(20_000)}${']'.repeat(20_000)},`)],
  ['proto-key', (json) => json.replace(/^\{/, '{"__proto__":{"isAdmin":true},')],
  ['constructor-key', (json) => json.replace(/^\{/, '{"constructor":{"prototype":{"x":1}},')],
  ['duplicate-keys', (json) => json.replace(/^\{/, '{"customerName":"first",')],
  ['nul-key', (json) => json.replace(/^\{/, '{"\\u0000":1,')],
  ['invalid-utf8', (json) => Buffer.concat([Buffer.from(json.slice(0, -1), 'utf8'), Buffer.from([0x2c, 0x22, 0x6e, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])])],
  ['escaped-lone-surrogate', (json) => json.replace(/^\{/, '{"note":"\\ud800",')],
  ['single-quotes', (json) => json.replaceAll('"', "'")],
  ['javascript-values', () => '{"customerName": NaN, "items": [Infinity]}'],
  ['comments', (json) => `/* x */${json}`]
]

const CONTENT_TYPES: Array<[string, string | undefined]> = [
  ['content-type:missing', undefined],
  ['content-type:text/plain', 'text/plain'],
  ['content-type:uppercase', 'APPLICATION/JSON'],
  ['content-type:charset-latin1', 'application/json; charset=latin1'],
  ['content-type:json-patch', 'application/json-patch+json'],
  ['content-type:form', 'application/x-www-form-urlencoded'],
  ['content-type:garbage', ';;;'],
  ['content-type:nul', 'application/json\u0000']
]

// ---------------------------------------------------------------------------------------------
// The app under test.

const app = await buildTestApp(t, { contract: false, env: { RATE_LIMIT_MAX: '100000000' } })
const { key } = await makeKey(app)
const { key: productsOnly } = await makeKey(app, ['products:list', 'products:find'])
const { key: ordersOnly } = await makeKey(app, ['orders:create', 'orders:list', 'orders:find'])

const categories = [{ id: crypto.randomUUID(), name: 'Coffee' }, { id: crypto.randomUUID(), name: 'Tea' }]
const brands = [{ id: crypto.randomUUID(), name: 'Northwind' }]
const optionIds = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
const combinationIds = [crypto.randomUUID(), crypto.randomUUID()]
const products = [
  makeProduct({ name: 'Fuzz mug', barcode: '5901234123457', quantity: null, categoryIds: [categories[0]!.id], brandId: brands[0]!.id }),
  makeProduct({ name: 'Fuzz beans', quantity: 1_000_000, price: 12.5, discount: { type: 'percentage', value: 15, startsAt: null, endsAt: null }, categoryIds: [categories[0]!.id, categories[1]!.id] }),
  makeProduct({ name: 'Fuzz kettle', quantity: 3, price: 49.99, isAvailable: true }),
  makeProduct({ name: 'Fuzz unavailable', quantity: null, isAvailable: false }),
  makeProduct({
    name: 'Fuzz tee',
    quantity: undefined,
    brandId: brands[0]!.id,
    variants: [
      { id: crypto.randomUUID(), name: 'Color', options: [{ id: optionIds[0]!, name: 'Black' }, { id: optionIds[1]!, name: 'White' }] },
      { id: crypto.randomUUID(), name: 'Size', options: [{ id: optionIds[2]!, name: 'M' }] }
    ],
    combinations: [
      { id: combinationIds[0]!, optionIds: [optionIds[0]!, optionIds[2]!], sku: 'TEE-BLK-M', barcode: '4006381333931', quantity: null, price: 20, isAvailable: true },
      { id: combinationIds[1]!, optionIds: [optionIds[1]!, optionIds[2]!], price: 21.5, quantity: 1_000_000, isAvailable: true, discount: { type: 'amount', value: 2, startsAt: null, endsAt: null } }
    ]
  })
]
await importProducts(app, { categories, brands, products })
const productIds = products.map((p) => p.id)

const PHONES = ['+14155550123', '+4915123456789', '+442071838750', '+33142685300']
const setupOrders: Array<{ id: string, orderNumber: string }> = []
for (const productId of productIds.slice(0, 2)) {
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/orders',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: JSON.stringify({ customerName: 'Fuzz setup', customerPhone: PHONES[0], items: [{ productId, quantity: 1 }] })
  })
  if (res.statusCode !== 201) throw new Error(`setup order failed: ${res.statusCode} ${res.body}`)
  setupOrders.push(res.json<{ id: string, orderNumber: string }>())
}

const hints: Hints = {
  byName: {
    id: fc.constantFrom(...productIds, ...productIds.map((id) => id.toUpperCase())),
    // Order lines that exist: a product, or the tee with one of its own combinations.
    items: fc.array(fc.oneof(
      fc.record({ productId: fc.constantFrom(...productIds.slice(0, 4)), quantity: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: ['productId'] }),
      fc.record({ productId: fc.constant(products[4]!.id), combinationId: fc.constantFrom(...combinationIds), quantity: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: ['productId', 'combinationId'] })
    ), { minLength: 1, maxLength: 3 }),
    productId: fc.constantFrom(...productIds),
    combinationId: fc.constantFrom(...combinationIds, null),
    quantity: fc.integer({ min: 1, max: 3 }),
    customerPhone: fc.constantFrom(...PHONES, '4155550123', '(415) 555-0123'),
    phone: fc.constantFrom(...PHONES, null),
    country: fc.constantFrom('US', 'DE', 'gb', 'Germany', null),
    customerName: fc.constantFrom('Ada Lovelace', ' Grace Hopper ', 'Zoë Ñandú'),
    orderNumberOrId: fc.constantFrom(...setupOrders.flatMap((o) => [o.id, o.orderNumber, o.id.toUpperCase()]), '100001', '1'),
    query: fc.constantFrom('fuzz', 'MUG', 'TEE-BLK', '5901234123457', '10000', 'setup', '+1415', ''),
    page: fc.integer({ min: -3, max: 3 }),
    isAvailable: fc.constantFrom('true', 'false'),
    categoryIds: fc.subarray(categories.map((c) => c.id), { minLength: 1 }).map((ids) => ids.join(',')),
    brandIds: fc.constant(brands[0]!.id),
    barcode: fc.constantFrom('5901234123457', '4006381333931'),
    sku: fc.constantFrom(...products.map((p) => p.sku!), 'TEE-BLK-M'),
    'idempotency-key': fc.uuid()
  }
}

// The value a request that should succeed sends, by property or parameter name.
const canonical: Record<string, unknown> = {
  id: productIds[0],
  orderNumberOrId: setupOrders[0]!.orderNumber,
  customerName: 'Ada Lovelace',
  customerPhone: PHONES[0],
  items: [{ productId: productIds[0], quantity: 1 }]
}

// ---------------------------------------------------------------------------------------------
// Requests.

type Auth = { kind: string, headers: Record<string, string> }

const randomCase = (word: string) => fc.array(fc.boolean(), { minLength: word.length, maxLength: word.length })
  .map((flags) => [...word].map((c, i) => (flags[i] ? c.toUpperCase() : c.toLowerCase())).join(''))

const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ kind: 'x-api-key', headers: { 'x-api-key': key } }) },
  { weight: 6, arbitrary: randomCase('Api-Key').map((scheme) => ({ kind: 'authorization', headers: { authorization: `${scheme} ${key}` } })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'both-same', headers: { 'x-api-key': key, authorization: `Api-Key ${key}` } }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'both-different', headers: { 'x-api-key': key, authorization: `Api-Key ${generateSecret()}` } }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'missing', headers: {} }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'unknown-key', headers: { 'x-api-key': generateSecret() } }) },
  { weight: 1, arbitrary: fc.constantFrom(productsOnly, ordersOnly).map((limited) => ({ kind: 'limited-scopes', headers: { 'x-api-key': limited } })) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constantFrom('', ' ', `${key}x`, key.slice(0, -1), `sk_${'A'.repeat(42)}!`, `${key},${key}`, key.toUpperCase()).map((value) => ({ kind: 'malformed:x-api-key', headers: { 'x-api-key': value } })),
      fc.constantFrom('Bearer ' + key, 'Api-Key', 'Api-Key  ', `Api-Key ${key} extra`, `ApiKey ${key}`, `Basic ${Buffer.from(`u:${key}`).toString('base64')}`, key)
        .map((value) => ({ kind: 'malformed:authorization', headers: { authorization: value } })),
      hostileText.map((s) => ({ kind: `hostile:x-api-key=${s.kind}`, headers: { 'x-api-key': asHeaderValue(s.value as string) } })),
      hostileText.map((s) => ({ kind: `hostile:authorization=${s.kind}`, headers: { authorization: asHeaderValue(`Api-Key ${String(s.value)}`) } }))
    )
  }
)

interface Parts {
  pathValues: Record<string, string>
  query: Array<[string, string]>
  headers: Record<string, string>
  body?: unknown
  payload?: string | Buffer
  contentType?: string
}

/** One place a request can go wrong, and the values tried there. */
interface Slot {
  slot: string
  hostile: Hostile
  apply: (parts: Parts, value: unknown) => void
}

interface Mutation { slot: string, kind: string, apply: (parts: Parts) => void }

const mutationOf = (slot: Slot, sample: Sample): Mutation => ({ slot: slot.slot, kind: sample.kind, apply: (parts) => slot.apply(parts, sample.value) })

function slotsOf (op: Operation): Slot[] {
  const parameters = op.operation.parameters ?? []
  const bodySchema = op.operation.requestBody?.content?.['application/json']?.schema
  const slots: Slot[] = []
  for (const p of parameters) {
    const hostile = hostileParameterText(p.schema ?? {})
    if (p.in === 'path') slots.push({ slot: `path.${p.name}`, hostile, apply: (parts, value) => { parts.pathValues[p.name] = value as string } })
    if (p.in === 'query') {
      slots.push({ slot: `query.${p.name}`, hostile, apply: (parts, value) => { parts.query = [...parts.query.filter(([n]) => n !== p.name), [p.name, value as string]] } })
      const pairs: Sample[] = [{ kind: 'repeated', value: ['1', '2'] }, { kind: 'repeated-empty', value: ['', ''] }, { kind: 'repeated-many', value: Array.from({ length: 200 }, (_, i) => String(i)) }]
      const maxLength = resolveRef(p.schema ?? {}).maxLength
      // Each half fits, joined they do not: a list parameter's limit is the joined value's.
      if (typeof maxLength === 'number') pairs.push({ kind: 'repeated-halves-over-limit', value: ['m'.repeat(Math.ceil(maxLength / 2)), 'm'.repeat(Math.ceil(maxLength / 2))] })
      const real = hints.byName[p.name]
      if (real !== undefined) pairs.push(...fc.sample(fc.array(real.map(asText), { minLength: 2, maxLength: 3 }), { seed: SEED, numRuns: 2 }).map((value) => ({ kind: 'repeated-real', value })))
      slots.push({ slot: `query.${p.name}`, hostile: { sweep: pairs, arbitrary: fc.constantFrom(...pairs) }, apply: (parts, value) => { for (const v of value as string[]) parts.query.push([p.name, v]) } })
    }
    if (p.in === 'header') slots.push({ slot: `header.${p.name}`, hostile, apply: (parts, value) => { parts.headers[p.name] = asHeaderValue(value as string) } })
  }
  if (parameters.some((p) => p.in === 'query')) {
    const extras: Sample[] = [['unknown', '1'], ['__proto__', '1'], ['constructor', 'x'], ['page[]', '1'], ['query[a]', 'b'], ['', 'x'], ['%00', '1']].map(([name, value]) => ({ kind: `extra:${name!}`, value: [name, value] }))
    slots.push({ slot: 'query', hostile: { sweep: extras, arbitrary: fc.constantFrom(...extras) }, apply: (parts, value) => { parts.query.push(value as [string, string]) } })
  }
  if (bodySchema) {
    for (const slot of bodySlots(bodySchema)) {
      slots.push({ slot: `body.${slotName(slot.path)}`, hostile: hostileValue(slot.schema), apply: (parts, value) => { parts.body = setAt(parts.body, slot.path, value) } })
    }
    const raw: Sample[] = RAW_BODIES.flatMap(([kind, make]) => (kind === 'truncated' ? [0.1, 0.5, 0.95] : [0]).map((cut) => ({ kind, value: { make, cut } })))
    slots.push({
      slot: 'body',
      hostile: { sweep: raw, arbitrary: fc.tuple(fc.constantFrom(...RAW_BODIES), fc.double({ min: 0, max: 1, noNaN: true })).map(([[kind, make], cut]) => ({ kind, value: { make, cut } })) },
      apply: (parts, value) => {
        const { make, cut } = value as { make: (json: string, cut: number) => string | Buffer, cut: number }
        parts.payload = make(toJson(parts.body), cut)
      }
    })
    const types: Sample[] = CONTENT_TYPES.map(([kind, type]) => ({ kind, value: type }))
    slots.push({ slot: 'header.content-type', hostile: { sweep: types, arbitrary: fc.constantFrom(...types) }, apply: (parts, value) => { parts.contentType = value as string | undefined } })
  }
  return slots
}

interface Plan {
  arbitrary: fc.Arbitrary<FuzzRequest>
  /** The sweep: one valid request with each slot's edge values, run before the random ones. */
  examples: FuzzRequest[]
}

function buildRequest (op: Operation, parts: Parts, auth: Auth, mutation: Mutation | null, client: number): FuzzRequest {
  const bodySchema = op.operation.requestBody?.content?.['application/json']?.schema
  mutation?.apply(parts)
  const url = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => percentEncode(parts.pathValues[name] ?? '')) +
    (parts.query.length > 0 ? `?${parts.query.map(([n, v]) => `${percentEncode(n)}=${percentEncode(v)}`).join('&')}` : '')
  const headers: Record<string, string> = { ...auth.headers, ...parts.headers }
  if (parts.contentType !== undefined) headers['content-type'] = parts.contentType
  const payload = parts.payload ?? (bodySchema ? toJson(parts.body) : undefined)
  // Each request comes from an address of its own, as the limit on failed keys counts per address.
  const remoteAddress = `10.0.${client % 250}.${(client * 7) % 250 + 1}`
  const label = mutation ? `${mutation.slot}=${mutation.kind}` : 'valid'
  return { method: op.method, url, headers, ...(payload === undefined ? {} : { payload }), remoteAddress, mutation: `${label} (key: ${auth.kind})` }
}

/** A request that succeeds, built from the first real value of each required input. */
function baseParts (op: Operation): Parts {
  const parameters = op.operation.parameters ?? []
  const bodySchema = op.operation.requestBody?.content?.['application/json']?.schema
  return {
    pathValues: Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, asText(canonical[p.name] ?? 'x')])),
    query: [],
    headers: {},
    body: bodySchema ? minimalBody(bodySchema) : undefined,
    contentType: bodySchema ? 'application/json' : undefined
  }
}

function minimalBody (input: JsonSchema): unknown {
  const schema = resolveRef(input)
  const required = (schema.required ?? []) as string[]
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
  return Object.fromEntries(required.map((name) => [name, canonical[name] ?? (properties[name] ? minimalBody(properties[name]) : null)]))
}

function operationPlan (op: Operation): Plan {
  const parameters = op.operation.parameters ?? []
  const inPath = parameters.filter((p) => p.in === 'path')
  const inQuery = parameters.filter((p) => p.in === 'query')
  const inHeader = parameters.filter((p) => p.in === 'header')
  const bodySchema = op.operation.requestBody?.content?.['application/json']?.schema

  const pathValues = fc.record(Object.fromEntries(inPath.map((p) => [p.name, validValue(p.schema ?? {}, hints, p.name).map(asText)])))
  const queryValues = fc.record(Object.fromEntries(inQuery.map((p) => [p.name, validValue(p.schema ?? {}, hints, p.name).map(asText)])), { requiredKeys: inQuery.filter((p) => p.required).map((p) => p.name) })
  const headerValues = fc.record(Object.fromEntries(inHeader.map((p) => [p.name, validValue(p.schema ?? {}, hints, p.name).map(asText)])), { requiredKeys: inHeader.filter((p) => p.required).map((p) => p.name) })
  const body = bodySchema ? validValue(bodySchema, hints) : fc.constant(undefined)

  const slots = slotsOf(op)
  const mutations = slots.map((slot) => slot.hostile.arbitrary.map((sample) => mutationOf(slot, sample)))
  const mutation = mutations.length > 0 ? fc.option(fc.oneof(...mutations), { freq: 4 }) : fc.constant(null)

  const arbitrary = fc.record({ pathValues, queryValues, headerValues, body, auth, mutation, client: fc.integer({ min: 1, max: 60_000 }) })
    .map(({ pathValues, queryValues, headerValues, body, auth, mutation, client }) => buildRequest(op, {
      pathValues: { ...(pathValues as Record<string, string>) },
      query: Object.entries(queryValues as Record<string, string>),
      headers: Object.fromEntries(Object.entries(headerValues as Record<string, string>).map(([k, v]) => [k, asHeaderValue(v)])),
      body,
      contentType: bodySchema ? 'application/json' : undefined
    }, auth, mutation, client))

  const goodKey: Auth = { kind: 'x-api-key', headers: { 'x-api-key': key } }
  const examples = [
    buildRequest(op, baseParts(op), goodKey, null, 0),
    ...slots.flatMap((slot) => slot.hostile.sweep.map((sample, i) => buildRequest(op, baseParts(op), goodKey, mutationOf(slot, sample), i)))
  ]
  return { arbitrary, examples }
}

// ---------------------------------------------------------------------------------------------
// Judging a response.

const ERROR_KEYS = new Set(['error', 'message', 'requestId', 'details'])

function problemsOf (request: FuzzRequest, outcome: Outcome): string[] {
  const problems: string[] = []
  if (outcome.statusCode >= 500) problems.push(`status ${outcome.statusCode}`)
  if (outcome.statusCode >= 400) {
    let body: unknown
    try {
      body = JSON.parse(outcome.body)
    } catch {
      problems.push('the error body is not JSON')
    }
    if (body !== undefined) {
      const b = body as Record<string, unknown>
      const shaped = typeof b === 'object' && b !== null && !Array.isArray(b) &&
        typeof b.error === 'string' && typeof b.message === 'string' && typeof b.requestId === 'string' &&
        Object.keys(b).every((k) => ERROR_KEYS.has(k)) &&
        (b.details === undefined || (Array.isArray(b.details) && b.details.every((d) => typeof d?.path === 'string' && typeof d?.message === 'string')))
      if (!shaped) problems.push('the error body is not { error, message, requestId, details? }')
      else if (b.requestId !== outcome.headers['request-id']) problems.push('the error body\'s requestId is not the Request-Id header')
    }
  }
  problems.push(...checkResponse(request.method, request.url, outcome).map((p) => `openapi.yaml: ${p}`))
  return problems
}

function errorCode (outcome: Outcome): string {
  try {
    const body = JSON.parse(outcome.body) as { error?: unknown }
    return typeof body.error === 'string' ? body.error : '-'
  } catch {
    return '-'
  }
}

// Long runs of one character (the huge strings) are written ⟨x × 20000⟩, so reports stay readable.
function compressRuns (text: string): string {
  return text.replace(/(%[0-9A-F]{2}|\\u[0-9a-fA-F]{4}|\\.|[^\\%])\1{19,}/g, (run, unit: string) => `⟨${unit} × ${run.length / unit.length}⟩`)
}

// Text that reads the same printed raw: no control characters, no lone surrogates.
const printable = (text: string) => [...text].every((c) => (c >= ' ' || c === '\n') && !/^[\uD800-\uDFFF]$/.test(c))

function show (text: string, limit = 300): string {
  const compact = compressRuns(JSON.stringify(text))
  return compact.length > limit ? `${compact.slice(0, limit)}… (${text.length} chars)` : compact
}

// Keys are made afresh each run: a report names them by what they may do.
function withKeyNames (text: string): string {
  return text.replaceAll(key, '<key: every scope>').replaceAll(productsOnly, '<key: products scopes>').replaceAll(ordersOnly, '<key: orders scopes>')
}

function describe (request: FuzzRequest, outcome?: Outcome): string {
  const url = compressRuns(request.url)
  const lines = [`${request.method} ${url.length > 400 ? `${url.slice(0, 400)}… (${request.url.length} chars)` : url}`]
  for (const [name, value] of Object.entries(request.headers)) lines.push(`  ${name}: ${withKeyNames(show(value, 200))}`)
  lines.push(`  (from ${request.remoteAddress})`)
  if (request.payload !== undefined) {
    lines.push(Buffer.isBuffer(request.payload)
      ? `  body (bytes, hex): ${request.payload.toString('hex').slice(0, 400)}`
      : `  body: ${printable(request.payload) ? compressRuns(request.payload).slice(0, 600) : show(request.payload, 600)}`)
  }
  lines.push(`  generated as: ${request.mutation}`)
  if (outcome) lines.push(`→ ${outcome.statusCode} ${outcome.body.slice(0, 400)}`)
  return lines.join('\n')
}

async function send (request: FuzzRequest): Promise<Outcome> {
  const res = await app.inject({
    method: request.method as 'GET' | 'POST',
    url: request.url,
    headers: request.headers,
    remoteAddress: request.remoteAddress,
    ...(request.payload === undefined ? {} : { payload: request.payload })
  })
  return { statusCode: res.statusCode, headers: res.headers, body: res.body }
}

/** Kinds that are one cause: every way of putting a NUL or a lone surrogate into text. */
function family (kind: string): string {
  if (/^(hostile:[\w-]+=)?nul/.test(kind)) return kind.replace(/nul[\w-]*$/, 'nul')
  if (/(surrogate)/.test(kind)) return kind.replace(/[\w-]*surrogates?$/, 'lone-surrogate')
  return kind
}

/** Failures of one operation, mutation kind, status and problems are one failure. */
function signatureOf (operationKey: string, request: FuzzRequest, outcome: Outcome, problems: string[]): string {
  const kind = request.mutation.replace(/ \(key: [^)]*\)$/, '').replace(/=(.*)$/, (_, k: string) => `=${family(k)}`)
  return `${operationKey} | ${kind} | ${outcome.statusCode} ${errorCode(outcome)} | ${problems.map((p) => p.replace(/^openapi\.yaml: /, '').replace(/(: | \().*/s, '')).join('; ')}`
}

interface Failure { signature: string, request: FuzzRequest, outcome: Outcome, problems: string[], report: string }

// ---------------------------------------------------------------------------------------------

const { operations } = openApi()
const seenOperations = new Set<string>()
const summary: string[] = []
const failures: Failure[] = []
const started = Date.now()

t.comment(`fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} (per operation); ${operations.length} operations in openapi.yaml`)

for (const [index, op] of operations.entries()) {
  const operationKey = `${op.method} ${op.path}`
  t.test(`fuzz ${operationKey}`, async (t) => {
    seenOperations.add(operationKey)
    const { arbitrary, examples } = operationPlan(op)
    const statuses = new Map<string, number>()
    const known = new Map<string, Failure>()
    let requests = 0
    // Nothing in the document to vary: a few requests show the route holds.
    const hasInputs = (op.operation.parameters ?? []).length > 0 || op.operation.requestBody !== undefined
    const budget = hasInputs ? RUNS : Math.min(RUNS, 20)
    let runsLeft = budget
    let pendingExamples = examples
    let round = 0
    for (; round < MAX_ROUNDS && runsLeft > 0; round++) {
      const roundSeed = SEED + index * 1000 + round
      let generated = 0
      let firstFailure: Failure | undefined
      let shrinkSteps = 0
      const property = fc.asyncProperty(arbitrary, async (request) => {
        if (firstFailure === undefined) generated++
        else if (++shrinkSteps > SHRINK_BUDGET) return true
        requests++
        const outcome = await send(request)
        const status = `${outcome.statusCode} ${outcome.statusCode >= 400 ? errorCode(outcome) : ''}`.trim()
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        const problems = problemsOf(request, outcome)
        if (problems.length === 0) return true
        const signature = signatureOf(operationKey, request, outcome, problems)
        const failure = { signature, request, outcome, problems, report: '' }
        const previous = known.get(signature)
        if (previous) {
          if (describe(request).length < describe(previous.request).length) known.set(signature, { ...failure, report: previous.report })
          return true
        }
        firstFailure ??= failure
        throw new Error(`${problems.join('; ')}\n${describe(request, outcome)}`)
      })
      const result = await fc.check(property, { seed: roundSeed, numRuns: pendingExamples.length + runsLeft, examples: pendingExamples.map((e) => [e] as [FuzzRequest]) })
      // The sweep is not repeated by the next round: it goes on where this one failed.
      const sweptNow = Math.min(generated, pendingExamples.length)
      pendingExamples = pendingExamples.slice(sweptNow)
      runsLeft -= generated - sweptNow
      if (!result.failed) break
      const shrunk = result.counterexample?.[0] as FuzzRequest | undefined
      // The smallest request fast-check found, replayed: it is what the report shows.
      const final = shrunk ? await send(shrunk) : firstFailure!.outcome
      const finalProblems = shrunk ? problemsOf(shrunk, final) : firstFailure!.problems
      const report = `fast-check: seed ${result.seed}, path "${result.counterexamplePath ?? ''}", ${result.numShrinks} shrinks; replay with FUZZ_SEED=${SEED}`
      const first = firstFailure!
      // Shrinking may wander to another kind of failure; the report keeps each kind's own request.
      const sameKind = shrunk !== undefined && finalProblems.length > 0 && signatureOf(operationKey, shrunk, final, finalProblems) === first.signature
      known.set(first.signature, sameKind ? { ...first, request: shrunk, outcome: final, problems: finalProblems, report } : { ...first, report })
    }
    for (const failure of known.values()) {
      failures.push(failure)
      t.fail(failure.signature, { problems: failure.problems, request: describe(failure.request, failure.outcome), fastCheck: failure.report })
    }
    const statusList = [...statuses.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s} ×${n}`).join(', ')
    summary.push(`${operationKey}: ${requests} requests (${examples.length} swept, ${budget - Math.max(runsLeft, 0)} random, ${requests - examples.length - (budget - Math.max(runsLeft, 0))} shrinking) — ${statusList}`)
    t.pass(`${operationKey}: ${requests} requests, ${known.size} distinct failures`)
  })
}

// ---------------------------------------------------------------------------------------------
// What app.inject cannot send: header blocks and lines Node's HTTP parser refuses, through a
// raw socket to the listening app. Whatever arrives, the answer is the Error body with its
// Request-Id, and a refusal closes the connection.

const MALFORMED_LINES: Array<[string, string]> = [
  ['no-colon', 'NoColonHere'],
  ['space-before-colon', 'X-Thing : 1'],
  ['empty-name', ': value'],
  ['control-in-name', 'X-\u0001Thing: 1'],
  ['control-in-value', 'X-Thing: a\u0001b'],
  ['nul-in-value', 'X-Thing: a\u0000b'],
  ['del-in-name', 'X-\u007fThing: 1'],
  ['obs-fold', 'X-Thing: a\r\n folded'],
  ['bare-cr', 'X-Thing: a\rb'],
  ['bad-content-length', 'Content-Length: abc'],
  ['two-content-lengths', 'Content-Length: 1\r\nContent-Length: 2'],
  ['bad-transfer-encoding', 'Transfer-Encoding: chunked\r\nContent-Length: 3'],
  ['utf8-name', 'X-Ünïcode: 1'],
  ['separator-in-name', 'X(Thing): 1']
]
const MALFORMED_REQUEST_LINES: Array<[string, (path: string) => string]> = [
  ['bad-version', (path) => `GET ${path} HTTP/9.9`],
  ['no-version', (path) => `GET ${path}`],
  ['lower-case-method', (path) => `get ${path} HTTP/1.1`],
  ['control-in-method', (path) => `G\u0001T ${path} HTTP/1.1`],
  ['space-in-target', (path) => `GET ${path} x HTTP/1.1`],
  ['nul-in-target', (path) => `GET ${path}\u0000 HTTP/1.1`],
  ['garbage', () => '\u0016\u0003\u0001\u0002\u0000']
]

interface RawCase { kind: string, bytes: Buffer }

const rawCase: fc.Arbitrary<RawCase> = fc.record({
  op: fc.constantFrom(...openApi().operations),
  requestId: fc.option(fc.constantFrom('fuzz-raw-1', 'has space', 'x'.repeat(129)), { nil: undefined }),
  problem: fc.oneof(
    // One huge header, or many headers adding up past the limit.
    fc.integer({ min: 17, max: 200 }).map((kb) => ({ kind: `header-block:one-${kb}kB`, lines: [`X-Big: ${'a'.repeat(kb * 1024)}`], first: undefined as ((path: string) => string) | undefined })),
    fc.integer({ min: 200, max: 3000 }).map((n) => ({ kind: `header-block:${n}-headers`, lines: Array.from({ length: n }, (_, i) => `X-H${i}: ${'b'.repeat(20)}`), first: undefined })),
    fc.constantFrom(...MALFORMED_LINES).map(([kind, line]) => ({ kind: `header-line:${kind}`, lines: [line], first: undefined })),
    fc.constantFrom(...MALFORMED_REQUEST_LINES).map(([kind, first]) => ({ kind: `request-line:${kind}`, lines: [] as string[], first }))
  )
}).map(({ op, requestId, problem }) => {
  const path = op.path.replace(/\{[^}]+\}/g, 'x')
  const head = [
    problem.first ? problem.first(path) : `${op.method} ${path} HTTP/1.1`,
    'Host: fuzz',
    `X-Api-Key: ${key}`,
    ...(requestId === undefined ? [] : [`X-Request-Id: ${requestId}`]),
    ...problem.lines
  ]
  return { kind: `${op.method} ${op.path} | ${problem.kind}`, bytes: Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1') }
})

t.test('raw socket: oversized header blocks and malformed lines answer the Error body, never 5xx', async (t) => {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const statuses = new Map<string, number>()
  const problems = new Map<string, string>()
  await fc.assert(fc.asyncProperty(rawCase, async ({ kind, bytes }) => {
    const answer = await rawRequest(port, [bytes])
    const found: string[] = []
    if (answer.statusCode >= 500) found.push(`status ${answer.statusCode}`)
    const code = answer.statusCode >= 400 ? errorCode({ statusCode: answer.statusCode, headers: answer.headers, body: answer.body }) : ''
    statuses.set(`${answer.statusCode} ${code}`.trim(), (statuses.get(`${answer.statusCode} ${code}`.trim()) ?? 0) + 1)
    if (answer.statusCode >= 400) {
      let body: Record<string, unknown> | undefined
      try {
        body = JSON.parse(answer.body) as Record<string, unknown>
      } catch {
        found.push('the error body is not JSON')
      }
      if (body !== undefined && !(typeof body.error === 'string' && typeof body.message === 'string' && typeof body.requestId === 'string' && Object.keys(body).every((k) => ERROR_KEYS.has(k)))) {
        found.push('the error body is not { error, message, requestId, details? }')
      } else if (body !== undefined && body.requestId !== answer.headers['request-id']) found.push('the error body\'s requestId is not the Request-Id header')
    }
    if (code === 'request_header_too_large' || code === 'malformed_request') {
      if (answer.headers.connection !== 'close' || !answer.closed) found.push('a refusal left the connection open')
    }
    if (found.length > 0 && !problems.has(kind)) problems.set(kind, `${found.join('; ')} → ${answer.statusCode} ${answer.body.slice(0, 200)}`)
    return true
  }), { seed: SEED, numRuns: Math.min(RUNS, 120) })
  t.comment(`raw socket: ${[...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s} ×${n}`).join(', ')}`)
  t.same([...problems].map(([kind, problem]) => `${kind}: ${problem}`), [], 'every answer is the Error body with its Request-Id, never 5xx')
  t.ok(statuses.has('431 request_header_too_large') && statuses.has('400 malformed_request'), 'both refusals were met')
})

t.test('summary', async (t) => {
  t.same(operations.map((o) => `${o.method} ${o.path}`).filter((k) => !seenOperations.has(k)), [], 'every operation of openapi.yaml was fuzzed')
  t.comment(`fuzz summary (FUZZ_SEED=${SEED}, ${((Date.now() - started) / 1000).toFixed(1)} s):`)
  for (const line of summary) t.comment(`  ${line}`)
  t.comment(`distinct failures: ${failures.length}`)
  for (const failure of failures) t.comment(`  ${failure.signature}`)
})
