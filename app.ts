// buildApp: the whole service as a Fastify instance that never listens (server.ts does).
import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import Fastify, { LogController, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { trustProxySetting, type Config } from './config.ts'
import type { Database } from './db/client.ts'
import { buildValidator } from './lib/validation.ts'
import { requestKeys } from './plugins/auth.ts'
import background from './plugins/background.ts'
import databasePlugin from './plugins/database.ts'
import errors, { clientErrorHandler, frameworkErrors } from './plugins/errors.ts'
import inputGuard from './plugins/input-guard.ts'
import metrics from './plugins/metrics.ts'
import openapi from './plugins/openapi.ts'
import redis from './plugins/redis.ts'
import state from './plugins/state.ts'
import webhooks from './plugins/webhooks.ts'
import externalV1 from './routes/external/v1/index.ts'
import type { Resolver } from './services/webhooks/url-policy.ts'
import health from './routes/health.ts'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    /** Set on SIGTERM/SIGINT: /readyz fails so load balancers stop sending traffic. */
    draining: boolean
  }
}

export interface AppOptions {
  config: Config
  database: Database
  logger?: FastifyServerOptions['logger']
  /** How webhook hosts are resolved (tests play DNS with it); the system's resolver otherwise. */
  webhookResolver?: Resolver
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** A client's X-Request-Id when it is safe to echo; otherwise one we make. */
function requestIdOf (req: { headers: IncomingHttpHeaders }): string {
  const given = req.headers['x-request-id']
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID()
}

export async function buildApp (options: AppOptions) {
  const { config } = options
  const app = Fastify({
    logger: options.logger ?? {
      level: config.LOG_LEVEL,
      // Keys never reach the logs, whichever header carried them.
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]'], censor: '[redacted]' }
    },
    genReqId: requestIdOf,
    // Requests the HTTP parser refuses get the same error body and Request-Id as the rest.
    clientErrorHandler: clientErrorHandler(requestIdOf),
    // Node would answer a missing Host with an empty 400 of its own: the errors plugin does.
    http: { requireHostHeader: false },
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    bodyLimit: config.BODY_LIMIT,
    // JSON keys that reach a prototype are parsed as plain keys, so the input guard can refuse
    // them by name (validation_failed) rather than the parser calling the body invalid JSON.
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    trustProxy: trustProxySetting(config.TRUST_PROXY),
    frameworkErrors,
    schemaController: { compilersFactory: { buildValidator: buildValidator as never } },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Bounded waits: a slow or stuck client cannot hold a connection forever.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    // A deadline for every request (create-order sets its own): a query on a black-holed
    // connection never fails by itself.
    handlerTimeout: config.HANDLER_TIMEOUT_MS,
    connectionTimeout: config.CONNECTION_TIMEOUT_MS,
    // While closing, requests on open connections are still served; /readyz already fails.
    return503OnClosing: false
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  app.decorate('draining', false)
  // Only JSON bodies are accepted; anything else answers 415 unsupported_media_type.
  app.removeContentTypeParser('text/plain')

  app.addHook('onRequest', async (request, reply) => {
    reply.header('request-id', request.id)
    reply.header('x-content-type-options', 'nosniff')
  })

  await app.register(errors, { requestId: requestIdOf })
  await app.register(inputGuard)
  await app.register(openapi)
  await app.register(databasePlugin, { database: options.database })
  await app.register(state)
  await app.register(redis)
  await app.register(metrics)
  await app.register(webhooks, options.webhookResolver === undefined ? {} : { resolve: options.webhookResolver })
  await app.register(background)
  await app.register(requestKeys)
  await app.register(health)
  await app.register(externalV1, { prefix: '/external/v1' })
  return app
}

export type App = Awaited<ReturnType<typeof buildApp>>
