// Admits every /external/v1 request: authenticates its API key, counts it against the rate
// limit, and enforces the route's scope.
import fp from 'fastify-plugin'
import type { ApiKeyRecord } from '../db/api-keys.ts'
import { apiError } from '../errors.ts'
import { isWellFormedSecret, type Scope } from '../lib/api-key-secret.ts'

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRecord | null
  }
  interface FastifyContextConfig {
    /** The scope a key needs to call the route; of a list, any one of them. */
    scope?: Scope | readonly Scope[]
  }
}

const AUTHORIZATION = /^api-key\s+(\S+)\s*$/i

const MESSAGES = {
  missing: 'Send your API key in the X-Api-Key header or as Authorization: Api-Key <key>',
  malformed: 'The API key is malformed',
  conflict: 'X-Api-Key and Authorization carry different keys',
  unknown: 'The API key is not valid',
  inactive: 'The API key is inactive',
  revoked: 'The API key has been revoked',
  expired: 'The API key has expired'
} as const

type AuthFailure = keyof typeof MESSAGES

function presentedSecret (headers: Record<string, string | string[] | undefined>): { secret: string } | { failure: AuthFailure } {
  const fromHeader = headers['x-api-key']
  const authorization = headers.authorization
  if (Array.isArray(fromHeader) || Array.isArray(authorization)) return { failure: 'malformed' }
  let fromAuthorization: string | undefined
  if (authorization !== undefined) {
    const match = AUTHORIZATION.exec(authorization)
    if (!match) return { failure: 'malformed' }
    fromAuthorization = match[1]
  }
  const xApiKey = fromHeader?.trim()
  if (xApiKey !== undefined && fromAuthorization !== undefined && xApiKey !== fromAuthorization) return { failure: 'conflict' }
  const secret = xApiKey ?? fromAuthorization
  if (secret === undefined || secret === '') return { failure: 'missing' }
  if (!isWellFormedSecret(secret)) return { failure: 'malformed' }
  return { secret }
}

export default fp(async function authPlugin (app) {
  app.decorateRequest('apiKey', null)
  const countRequest = app.rateLimit().bind(app)

  // The whole admission of a request, in order: who is calling; whether they may call this
  // often (per key once known, per client IP otherwise, so guessing keys is slow too); then
  // 401 or 403 before any body is read.
  app.addHook('onRequest', async (request, reply) => {
    const presented = presentedSecret(request.headers)
    let failure: AuthFailure | null = null
    if ('secret' in presented) {
      const result = await app.apiKeys.authenticate(presented.secret)
      if (result.ok) request.apiKey = result.key
      else failure = result.reason
    } else {
      failure = presented.failure
    }
    if (failure !== null) app.metrics.authFailures.inc({ cause: failure })
    await countRequest(request, reply)
    if (failure !== null) throw apiError('invalid_api_key', MESSAGES[failure])
    const scope = request.routeOptions.config.scope
    if (scope === undefined) return
    const anyOf: readonly Scope[] = typeof scope === 'string' ? [scope] : scope
    if (!anyOf.some((s) => request.apiKey!.scopes.includes(s))) {
      throw apiError('insufficient_scope', `This API key lacks the ${anyOf.join(' or ')} scope`)
    }
  })
}, { name: 'auth', dependencies: ['store', 'rate-limit', 'metrics'] })
