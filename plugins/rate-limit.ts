// The rate limiter of /external/v1: per API key once authenticated, per client IP for
// requests that fail authentication; counts shared through Redis when REDIS_URL is set.
// Adds `app.rateLimit()` (the auth plugin calls it at the right moment) and the draft-11
// `RateLimit` + `RateLimit-Policy` headers beside the RateLimit-Limit/-Remaining/-Reset trio.
import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import { apiError } from '../errors.ts'
import { fleetRateLimitCounter } from '../lib/rate-limit-counts.ts'

export default fp(async function rateLimitPlugin (app) {
  const { config } = app
  const counter = fleetRateLimitCounter(app.redis, {
    onFallback: (err) => app.log.error({ err }, 'rate limiting: Redis unreachable, counting per instance until it is back'),
    onRecovered: () => app.log.info('rate limiting: Redis is back, counts are shared again')
  })

  await app.register(rateLimit, {
    // No hook of its own: authentication decides when a request is counted, and as what.
    global: false,
    store: counter,
    timeWindow: config.RATE_LIMIT_WINDOW * 1000,
    // Counted once authentication has decided: with no key (it failed), per client IP.
    keyGenerator: (request) => (request.authenticatedKey ? `key:${request.authenticatedKey.id}` : `ip:${request.ip}`),
    max: (request) => (request.authenticatedKey ? request.authenticatedKey.rateLimit ?? config.RATE_LIMIT_MAX : config.AUTH_FAILURE_LIMIT),
    enableDraftSpec: true,
    errorResponseBuilder: (_request, context) =>
      apiError('rate_limit_exceeded', `Rate limit exceeded: ${context.max} requests per ${config.RATE_LIMIT_WINDOW} s; retry in ${context.after}`)
  })

  app.addHook('onSend', async (request, reply) => {
    const limit = reply.getHeader('ratelimit-limit')
    if (limit === undefined) return
    const policy = request.authenticatedKey ? 'per-key' : 'per-ip'
    reply.header('ratelimit-policy', `"${policy}";q=${String(limit)};w=${config.RATE_LIMIT_WINDOW}`)
    reply.header('ratelimit', `"${policy}";r=${String(reply.getHeader('ratelimit-remaining'))};t=${String(reply.getHeader('ratelimit-reset'))}`)
  })
}, { name: 'rate-limit', dependencies: ['request-keys', 'redis'] })
