// Admits every /external/v1 request: authenticates its API key, counts it against the rate
// limit, and enforces the route's scope. `requestKeys`, registered at the root, adds the
// request's key fields everywhere, so that outside the prefix they say "no key" too.
import fp from 'fastify-plugin'
import type { ApiKeyRecord } from '../db/api-keys.ts'
import { apiError } from '../errors.ts'
import { isWellFormedSecret, type Scope } from '../lib/api-key-secret.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The key the request was authenticated with, or null: before authentication has
     * decided, when it failed, and on every route outside /external/v1 (none takes a key).
     * What may run then (the rate limiter counting a failed attempt) reads this one.
     */
    authenticatedKey: ApiKeyRecord | null
    /**
     * The caller's key, for the handlers of /external/v1: the admission hook below answers
     * 401 before any of them can run without one. Read where no key was authenticated it
     * throws (a 500) rather than pretend there is one.
     */
    readonly apiKey: ApiKeyRecord
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
  rolled: 'The API key has been replaced by a new one and its grace period has ended',
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

export const requestKeys = fp(async function requestKeysPlugin (app) {
  app.decorateRequest('authenticatedKey', null)
  app.decorateRequest('apiKey', {
    getter () {
      if (this.authenticatedKey === null) throw new Error(`request.apiKey read on ${this.method} ${this.url}, where no key was authenticated`)
      return this.authenticatedKey
    }
  })
}, { name: 'request-keys' })

export default fp(async function authPlugin (app) {
  const countRequest = app.rateLimit().bind(app)

  // The whole admission of a request, in order: who is calling; whether they may call this
  // often (per key once known, per client IP otherwise, so guessing keys is slow too); then
  // 401 or 403 before any body is read.
  app.addHook('onRequest', async (request, reply) => {
    const presented = presentedSecret(request.headers)
    let failure: AuthFailure | null = null
    if ('secret' in presented) {
      const result = await app.apiKeys.authenticate(presented.secret)
      if (result.ok) request.authenticatedKey = result.key
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
    if (!anyOf.some((s) => request.apiKey.scopes.includes(s))) {
      throw apiError('insufficient_scope', `This API key lacks the ${anyOf.join(' or ')} scope`)
    }
  })
}, { name: 'auth', dependencies: ['request-keys', 'state', 'rate-limit', 'metrics'] })
