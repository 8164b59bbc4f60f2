// Adds webhooks: the URL policy the routes check endpoints with, and the delivery worker of
// this instance (started and stopped with the rest of the background work, plugins/background.ts).
import fp from 'fastify-plugin'
import { allowedHosts, retryScheduleMs } from '../config.ts'
import { WebhookUrlPolicy, type Resolver } from '../services/webhooks/url-policy.ts'
import { WebhookWorker } from '../services/webhooks/worker.ts'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: { policy: WebhookUrlPolicy, worker: WebhookWorker }
  }
}

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
    keepAliveMs: config.WEBHOOK_KEEP_ALIVE_MS,
    retryMs: retryScheduleMs(config.WEBHOOK_RETRY_SCHEDULE),
    jitter: 0.2,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    onOutcome: (outcome) => app.metrics.webhookDeliveries.inc({ outcome }),
    onError: (err, what) => app.log.warn({ err }, `webhooks: ${what} failed`)
  })
  app.decorate('webhooks', { policy, worker })
}, { name: 'webhooks', dependencies: ['database', 'metrics'] })
