// Background work of each instance, started when the app is ready and stopped when it
// closes: the hourly deletion of expired Idempotency-Key records.
import fp from 'fastify-plugin'
import { deleteExpiredReplays } from '../services/place-order.ts'

export default fp(async function jobsPlugin (app) {
  let timer: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => {
    timer = setInterval(() => {
      deleteExpiredReplays(app.database).catch((err: unknown) => app.log.warn({ err }, 'idempotency cleanup failed'))
    }, app.config.IDEMPOTENCY_CLEANUP_MS).unref()
  })
  app.addHook('onClose', async () => clearInterval(timer))
}, { name: 'jobs', dependencies: ['store'] })
