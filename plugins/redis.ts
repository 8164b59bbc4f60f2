// Adds `app.redis`: the shared Redis of the fleet when REDIS_URL is set, else null. Commands
// fail fast while Redis is down (no offline queue), so callers can fall back at once.
import { once } from 'node:events'
import { setTimeout } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance { redis: Redis | null }
}

export default fp(async function redisPlugin (app) {
  const { REDIS_URL: url, REDIS_COMMAND_TIMEOUT_MS, REDIS_CONNECT_TIMEOUT_MS } = app.config
  if (!url) {
    app.decorate('redis', null)
    return
  }
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000)
  })
  let reported = false
  redis.on('error', (err) => {
    // ioredis reports every reconnect attempt; one line per outage is enough.
    if (!reported) app.log.error({ err }, 'redis connection failed; retrying in the background')
    reported = true
  })
  redis.on('ready', () => {
    if (reported) app.log.info('redis connection is back')
    reported = false
  })
  // Give Redis a moment to connect so the first requests count in it; serve without it otherwise.
  await Promise.race([once(redis, 'ready'), setTimeout(REDIS_CONNECT_TIMEOUT_MS)]).catch(() => {})
  app.decorate('redis', redis)
  app.addHook('onClose', async () => { redis.disconnect() })
}, { name: 'redis' })
