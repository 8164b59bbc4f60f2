// Authenticates the API key of every /external/v1 request and enforces the route's scope.
import fp from 'fastify-plugin'
import type { ApiKeyRecord } from '../db/api-keys.ts'
import { apiError, type ApiError } from '../errors.ts'
import { isWellFormedSecret, type Scope } from '../lib/api-key-secret.ts'

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRecord | null
    authFailure: AuthFailure | null
    authError: ApiError | null
  }
  interface FastifyContextConfig {
    /** The scope a key needs to call the route. */
    scope?: Scope
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

export type AuthFailure = keyof typeof MESSAGES

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
  app.decorateRequest('authError', null)
  app.decorateRequest('authFailure', null)

  // Authentication records its outcome instead of throwing, so the rate limiter (a
  // route-level onRequest hook, which runs after this one) can count failed attempts per
  // client IP; the 401 or 403 is raised in preParsing, before any body is read.
  app.addHook('onRequest', async (request) => {
    const presented = presentedSecret(request.headers)
    let failure: AuthFailure
    if ('secret' in presented) {
      const result = await app.apiKeys.authenticate(presented.secret)
      if (result.ok) {
        request.apiKey = result.key
        return
      }
      failure = result.reason
    } else {
      failure = presented.failure
    }
    request.authFailure = failure
    request.authError = apiError('invalid_api_key', MESSAGES[failure])
  })

  app.addHook('preParsing', async (request) => {
    if (request.authError) throw request.authError
    const scope = request.routeOptions.config.scope
    if (scope !== undefined && !request.apiKey!.scopes.includes(scope)) {
      throw apiError('insufficient_scope', `This API key lacks the ${scope} scope`)
    }
  })
}, { name: 'auth', dependencies: ['store'] })
