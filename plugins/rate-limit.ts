// Rate limits for /external/v1 (decisions §6): per API key once authenticated, per client IP
// for requests that fail authentication; counts shared through Redis when REDIS_URL is set.
// Every response carries both header generations: RateLimit-Limit/-Remaining/-Reset and
// the draft-11 RateLimit + RateLimit-Policy.
import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { Redis } from 'ioredis'
import { apiError } from '../errors.ts'
import { fleetRateLimitStore } from '../lib/rate-limit-store.ts'

/** Failed authentications allowed per client IP and window: guessing keys stays slow. */
export const AUTH_FAILURE_LIMIT = 60

export interface RateLimitOptions {
  max: number
  windowSeconds: number
  redis: Redis | null
  onLimited?: () => void
}

export default fp<RateLimitOptions>(async function rateLimitPlugin (app, options) {
  const store = fleetRateLimitStore(options.redis, {
    onFallback: (err) => app.log.error({ err }, 'rate limiting: Redis unreachable, counting per instance until it is back'),
    onRecovered: () => app.log.info('rate limiting: Redis is back, counts are shared again')
  })

  await app.register(rateLimit, {
    global: true,
    // Route-level onRequest: runs after authentication (a context-level onRequest hook).
    hook: 'onRequest',
    store,
    timeWindow: options.windowSeconds * 1000,
    keyGenerator: (request) => (request.apiKey ? `key:${request.apiKey.id}` : `ip:${request.ip}`),
    max: (request) => (request.apiKey ? request.apiKey.rateLimit ?? options.max : AUTH_FAILURE_LIMIT),
    enableDraftSpec: true,
    onExceeded: () => options.onLimited?.(),
    errorResponseBuilder: (_request, context) =>
      apiError('rate_limit_exceeded', `Rate limit exceeded: ${context.max} requests per ${options.windowSeconds} s; retry in ${context.after}`)
  })

  app.addHook('onSend', async (request, reply) => {
    const limit = reply.getHeader('ratelimit-limit')
    if (limit === undefined) return
    const policy = request.apiKey ? 'per-key' : 'per-ip'
    reply.header('ratelimit-policy', `"${policy}";q=${String(limit)};w=${options.windowSeconds}`)
    reply.header('ratelimit', `"${policy}";r=${String(reply.getHeader('ratelimit-remaining'))};t=${String(reply.getHeader('ratelimit-reset'))}`)
  })
}, { name: 'rate-limit', dependencies: ['auth'] })
