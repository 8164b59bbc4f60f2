// Background work of each instance, started when the app is ready and stopped when it
// closes: the deletion of expired Idempotency-Key records, and the sweep that moves
// products' updatedAt when a discount window opens or closes. Both are idempotent, so every
// instance of a fleet may run them.
import fp from 'fastify-plugin'
import { markDiscountBoundaries } from '../services/catalog.ts'
import { deleteExpiredReplays } from '../services/place-order.ts'

export default fp(async function jobsPlugin (app) {
  const { config } = app
  const timers: NodeJS.Timeout[] = []
  const every = (ms: number, name: string, job: () => Promise<unknown>) => {
    timers.push(setInterval(() => { job().catch((err: unknown) => app.log.warn({ err }, `${name} failed`)) }, ms).unref())
  }
  app.addHook('onReady', async () => {
    every(config.IDEMPOTENCY_CLEANUP_MS, 'idempotency cleanup', () => deleteExpiredReplays(app.database))
    every(config.DISCOUNT_SWEEP_MS, 'discount sweep', () => markDiscountBoundaries(app, config.DISCOUNT_SWEEP_LOOKBACK_MS))
  })
  app.addHook('onClose', async () => { for (const timer of timers) clearInterval(timer) })
}, { name: 'jobs', dependencies: ['store'] })
