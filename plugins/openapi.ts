// The OpenAPI document, generated from the route schemas, and the interactive reference.
import fp from 'fastify-plugin'
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { retryScheduleMs, type Config } from '../config.ts'
import { changeSchemas } from '../schemas/changes.ts'
import { ErrorBody, RESPONSE_HEADERS } from '../schemas/common.ts'
import { exportSchemas } from '../schemas/export.ts'
import { PARAMETER_EXAMPLES } from '../schemas/examples.ts'
import { orderSchemas } from '../schemas/orders.ts'
import { productSchemas } from '../schemas/products.ts'
import { reservationSchemas } from '../schemas/reservations.ts'
import { webhookSchemas } from '../schemas/webhooks.ts'
import { delays, duration } from '../schemas/wording.ts'
import { SECRET_OVERLAP_MS } from '../services/webhooks/endpoints.ts'

export const API_DESCRIPTION = `The API a store gives its external integrators: read the catalogue (products, prices after
discounts, stock, variants and option combinations), create, list and fetch your own orders, and keep your
own copy in sync by following the changes feed or by receiving webhooks.

Authenticate every request with your API key, as \`X-Api-Key: <key>\` or \`Authorization: Api-Key <key>\`.
Every error answers \`{ "error": code, "message": text, "requestId": id }\`; quote the \`Request-Id\`
response header to support. Money amounts are JSON numbers with at most two decimals.

The examples come from the demo catalogue and work as they are against a demo store: together the
list parameters find one product, and the create-order example makes order 100001 for Ada Lovelace.`

const WEBHOOK_HEADER = (name: string, description: string, example: string, pattern: string) => ({
  name, in: 'header' as const, required: true, description, schema: { type: 'string' as const, pattern, maxLength: 1000 }, example
})

type Webhooks = NonNullable<Extract<NonNullable<FastifyDynamicSwaggerOptions['openapi']>, { webhooks?: unknown }>['webhooks']>

/** What the store POSTs to a webhook endpoint (OpenAPI 3.1 `webhooks`), with this instance's timeout and retries. */
export function webhooksOf (config: Pick<Config, 'WEBHOOK_TIMEOUT_MS' | 'WEBHOOK_RETRY_SCHEDULE'>): Webhooks {
  const timeout = duration(config.WEBHOOK_TIMEOUT_MS)
  return {
    changeEvent: {
      post: {
        operationId: 'receiveChangeEvent',
        summary: 'A change event, delivered to your endpoint',
        description: `Sent to each of your enabled endpoints for every event of the changes feed that your key may see and the endpoint's
\`events\` name, signed the Standard Webhooks way. Verify \`webhook-signature\` before trusting the body: it is \`v1,\` + base64 of
HMAC-SHA256, keyed with the base64-decoded part of your secret after \`whsec_\`, of \`{webhook-id}.{webhook-timestamp}.{raw body}\`
(any Standard Webhooks library does it, e.g. \`new Webhook(secret).verify(body, headers)\` of the \`standardwebhooks\` package).
During the ${duration(SECRET_OVERLAP_MS)} after a rotation two signatures come, space-separated: either secret verifies. Deduplicate on \`webhook-id\`:
a delivery may come more than once. Answer 2xx within ${timeout}; anything else is retried after about ${delays(retryScheduleMs(config.WEBHOOK_RETRY_SCHEDULE))}
(± 20%). Redirects are not followed.`,
        tags: ['Webhooks'],
        security: [],
        parameters: [
          WEBHOOK_HEADER('webhook-id', 'The event id, the same on every attempt and in the changes feed', 'evt_1042', '^evt_\\d+$'),
          WEBHOOK_HEADER('webhook-timestamp', 'Unix seconds of this attempt', '1795492867', '^\\d+$'),
          WEBHOOK_HEADER('webhook-signature', 'One or two (during a rotation) space-separated `v1,<base64>` signatures', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=', '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$')
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookPayload' } } } },
        responses: {
          200: { description: `Any 2xx within ${timeout}: delivered` },
          default: { description: `Anything else, a redirect or no answer within ${timeout}: retried later` }
        }
      }
    }
  }
}

export const sharedSchemas = [ErrorBody, ...productSchemas, ...orderSchemas, ...changeSchemas, ...webhookSchemas, ...reservationSchemas, ...exportSchemas]

interface Operation {
  operationId?: string
  parameters?: Array<{ name: string, example?: unknown }>
  responses?: Record<string, { headers?: Record<string, unknown> }>
}
interface DocumentShape { paths?: Record<string, Record<string, Operation>> }

const HEADERS_PATH = '#/components/headers/'

/**
 * The finishing touches @fastify/swagger has no schema keyword for: every response header
 * of RESPONSE_HEADERS becomes a reference to its one definition, and parameters get their
 * examples. An example for a parameter that is gone fails the generation, so none goes stale.
 */
export function finishDocument<D extends object> (document: D): D {
  const unused = new Set(Object.entries(PARAMETER_EXAMPLES).flatMap(([id, values]) => Object.keys(values).map((name) => `${id}.${name}`)))
  for (const item of Object.values((document as DocumentShape).paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const name of Object.keys(response.headers ?? {})) {
          if (Object.hasOwn(RESPONSE_HEADERS, name)) response.headers![name] = { $ref: `${HEADERS_PATH}${name}` }
        }
      }
      const examples = PARAMETER_EXAMPLES[operation.operationId ?? '']
      for (const parameter of operation.parameters ?? []) {
        if (examples === undefined || !Object.hasOwn(examples, parameter.name)) continue
        parameter.example = examples[parameter.name]
        unused.delete(`${operation.operationId}.${parameter.name}`)
      }
    }
  }
  if (unused.size > 0) throw new Error(`parameter examples for no parameter: ${[...unused].join(', ')}`)
  return document
}

// The reference is the store's own, under its name: no framework or Swagger branding.
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40" viewBox="0 0 300 40">
<rect x="2" y="4" width="32" height="32" rx="7" fill="#f2b35b"/>
<path d="M10 15h16l-1.4 13.2a2 2 0 0 1-2 1.8h-9.2a2 2 0 0 1-2-1.8z" fill="#3a2417"/>
<path d="M14 15v-2.2a4 4 0 0 1 8 0V15" fill="none" stroke="#3a2417" stroke-width="2.2"/>
<text x="44" y="27" font-family="Helvetica, Arial, sans-serif" font-size="20" font-weight="700" fill="#ffffff">Storefront</text>
<text x="152" y="27" font-family="Helvetica, Arial, sans-serif" font-size="20" fill="#f2b35b">External API</text>
</svg>`
const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#f2b35b"/>
<path d="M8 11h16l-1.4 13.2a2 2 0 0 1-2 1.8h-9.2a2 2 0 0 1-2-1.8z" fill="#3a2417"/>
<path d="M12 11V8.8a4 4 0 0 1 8 0V11" fill="none" stroke="#3a2417" stroke-width="2.2"/>
</svg>`
// The top bar in the store's colours, without the field for loading another document:
// partners read this one.
const THEME_CSS = `.swagger-ui .topbar { background-color: #3a2417; padding: 8px 0; }
.swagger-ui .topbar .download-url-wrapper { display: none; }
.swagger-ui .topbar-wrapper .link img { height: 40px; width: auto; }
`

/** The document's contact: what the operator configured, nothing when neither is set. */
export function contactOf (config: Pick<Config, 'API_CONTACT_EMAIL' | 'API_CONTACT_URL'>): { contact: { name: string, email?: string, url?: string } } | Record<string, never> {
  const { API_CONTACT_EMAIL: email, API_CONTACT_URL: url } = config
  if (email === undefined && url === undefined) return {}
  return { contact: { name: 'Integration support', ...(email === undefined ? {} : { email }), ...(url === undefined ? {} : { url }) } }
}

// The page's <title> is written into HTML as it is given.
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

export default fp(async function openapiPlugin (app) {
  const publicBaseUrl = app.config.PUBLIC_BASE_URL
  const title = app.config.API_TITLE
  for (const schema of sharedSchemas) app.addSchema(schema)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title, version: '1.0.0', description: API_DESCRIPTION, ...contactOf(app.config), license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
      ...(publicBaseUrl ? { servers: [{ url: publicBaseUrl }] } : {}),
      tags: [
        { name: 'Products', description: 'The catalogue' },
        { name: 'Orders', description: 'Orders created with your API key' },
        { name: 'Test mode', description: 'Only for test keys (`sk_test_…`): move your own test orders through their statuses to exercise your integration. Test orders take no stock, and only the test key that made them sees them' },
        { name: 'Changes', description: 'What changed, to keep your own copy in sync' },
        { name: 'Webhooks', description: 'The changes pushed to your own HTTPS endpoints, signed (Standard Webhooks)' },
        { name: 'Service', description: 'Health and readiness; no key needed' }
      ],
      components: {
        securitySchemes: {
          ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Your API key' },
          ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'The scheme `Api-Key` followed by your key: `Authorization: Api-Key <key>`' }
        },
        headers: Object.fromEntries(Object.entries(RESPONSE_HEADERS).map(([name, header]) => [name, { ...header }]))
      },
      security: [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }],
      webhooks: webhooksOf(app.config)
    },
    // Components keep the names of their $id (Product, Error…) instead of def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string | undefined) ?? `def-${i}` },
    transformObject: (documentObject) => finishDocument('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject)
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    logo: { type: 'image/svg+xml', content: LOGO_SVG, href: '/docs', target: '_self' },
    theme: {
      title: escapeHtml(title),
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON_SVG }],
      css: [{ filename: 'storefront.css', content: THEME_CSS }]
    },
    uiConfig: { docExpansion: 'list', defaultModelsExpandDepth: 0, displayRequestDuration: true }
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) => reply.type('application/yaml').send(app.swagger({ yaml: true })))
}, { name: 'openapi' })
