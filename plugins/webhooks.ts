// Adds webhooks: the URL policy the routes check endpoints with, and the delivery worker of
// this instance (started when the app is ready; on close it stops claiming, waits for the
// attempts in flight within the shutdown timeout and gives back what it could not finish).
import fp from 'fastify-plugin'
import { allowedHosts, retryScheduleMs } from '../config.ts'
import { WebhookUrlPolicy, type Resolver } from '../services/webhooks/url-policy.ts'
import { WebhookWorker } from '../services/webhooks/worker.ts'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: { policy: WebhookUrlPolicy, worker: WebhookWorker }
  }
}

/** How much of the shutdown timeout is kept for giving back unfinished deliveries. */
const RELEASE_MARGIN_MS = 1000

export default fp<{ resolve?: Resolver }>(async function webhooksPlugin (app, options) {
  const { config } = app
  const policy = new WebhookUrlPolicy({
    allowHttp: config.WEBHOOK_ALLOW_HTTP,
    allowedHosts: allowedHosts(config.WEBHOOK_ALLOWED_HOSTS),
    ...(options.resolve === undefined ? {} : { resolve: options.resolve })
  })
  const worker = new WebhookWorker(app.database, {
    policy,
    pollMs: config.WEBHOOK_POLL_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    leaseMs: config.WEBHOOK_LEASE_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
    retryMs: retryScheduleMs(config.WEBHOOK_RETRY_SCHEDULE),
    jitter: 0.2,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    onOutcome: (outcome) => app.metrics.webhookDeliveries.inc({ outcome }),
    onError: (err, what) => app.log.warn({ err }, `webhooks: ${what} failed`)
  })
  app.decorate('webhooks', { policy, worker })
  app.addHook('onReady', async () => worker.start())
  // Stopping begins before the server drains its connections, so the wait for attempts in
  // flight runs beside that drain, within the same shutdown timeout; the database is still
  // open until the app has closed.
  let stopping: Promise<void> | undefined
  const stop = () => (stopping ??= worker.stop(Math.max(0, config.SHUTDOWN_TIMEOUT - RELEASE_MARGIN_MS)))
  app.addHook('preClose', async () => { stop().catch(() => {}) })
  app.addHook('onClose', async () => stop())
}, { name: 'webhooks', dependencies: ['store', 'metrics'] })
