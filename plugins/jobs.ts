// Background work of each instance, started when the app is ready and stopped when it
// closes: the deletion of expired Idempotency-Key records, the sweep that moves products'
// updatedAt when a discount window opens or closes, publishing committed change events to
// the feed (which queues their webhook deliveries), and deleting events and finished
// deliveries past their retention. Each is safe on every instance of a
// fleet at once (publishing runs on one at a time).
import fp from 'fastify-plugin'
import { markDiscountBoundaries } from '../services/catalog.ts'
import { forgetOldChanges, publishChanges } from '../services/changes.ts'
import { deleteExpiredReplays } from '../services/place-order.ts'
import { forgetOldDeliveries } from '../services/webhooks/deliveries.ts'

export default fp(async function jobsPlugin (app) {
  const { config } = app
  const timers: NodeJS.Timeout[] = []
  const every = (ms: number, name: string, job: () => Promise<unknown>) => {
    // A run that takes longer than the interval is not overlapped by the next one.
    let running = false
    timers.push(setInterval(() => {
      if (running) return
      running = true
      job().catch((err: unknown) => app.log.warn({ err }, `${name} failed`)).finally(() => { running = false })
    }, ms).unref())
  }
  app.addHook('onReady', async () => {
    every(config.IDEMPOTENCY_CLEANUP_MS, 'idempotency cleanup', () => deleteExpiredReplays(app.database))
    every(config.DISCOUNT_SWEEP_MS, 'discount sweep', () => markDiscountBoundaries(app, config.DISCOUNT_SWEEP_LOOKBACK_MS))
    every(config.EVENT_PUBLISH_MS, 'event publishing', () => publishChanges(app.database))
    every(config.CHANGES_PRUNE_MS, 'changes retention', () => forgetOldChanges(app.database, config.CHANGES_RETENTION_DAYS))
    every(config.CHANGES_PRUNE_MS, 'webhook deliveries retention', () => forgetOldDeliveries(app.database, config.CHANGES_RETENTION_DAYS))
  })
  app.addHook('onClose', async () => { for (const timer of timers) clearInterval(timer) })
}, { name: 'jobs', dependencies: ['store'] })
