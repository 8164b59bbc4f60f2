// The OpenAPI document, generated from the route schemas, and the interactive reference.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { ErrorBody } from '../schemas/common.ts'
import { orderSchemas } from '../schemas/orders.ts'
import { productSchemas } from '../schemas/products.ts'

export const API_DESCRIPTION = `The API a store gives its external integrators: read the catalogue (products, prices after
discounts, stock, variants and option combinations) and create, list and fetch your own orders.

Authenticate every request with your API key, as \`X-Api-Key: <key>\` or \`Authorization: Api-Key <key>\`.
Every error answers \`{ "error": code, "message": text, "requestId": id }\`; quote the \`Request-Id\`
response header to support. Money amounts are JSON numbers with at most two decimals.`

export const sharedSchemas = [ErrorBody, ...productSchemas, ...orderSchemas]

export default fp(async function openapiPlugin (app) {
  const publicBaseUrl = app.config.PUBLIC_BASE_URL
  for (const schema of sharedSchemas) app.addSchema(schema)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Storefront External API', version: '1.0.0', description: API_DESCRIPTION, license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' } },
      ...(publicBaseUrl ? { servers: [{ url: publicBaseUrl }] } : {}),
      tags: [
        { name: 'Products', description: 'The catalogue' },
        { name: 'Orders', description: 'Orders created with your API key' },
        { name: 'Service', description: 'Health and readiness; no key needed' }
      ],
      components: {
        securitySchemes: {
          ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Your API key' },
          ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'The scheme `Api-Key` followed by your key: `Authorization: Api-Key <key>`' }
        }
      },
      security: [{ ApiKeyHeader: [] }, { ApiKeyAuthorization: [] }]
    },
    // Components keep the names of their $id (Product, Error…) instead of def-0, def-1.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string | undefined) ?? `def-${i}` }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) => reply.type('application/yaml').send(app.swagger({ yaml: true })))
}, { name: 'openapi' })
