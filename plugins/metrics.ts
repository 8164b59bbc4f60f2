// Prometheus metrics at /metrics: requests by route, method and status, latency, orders,
// authentication failures by cause, rate-limited requests, idempotent replays, database pool,
// webhook attempts by outcome and the age of the oldest due delivery, catalogue reads by the
// database that answered them and each replica's replay lag, stock reservations (made, ended,
// active and the units they hold).
import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { activeHolds } from '../services/reservations.ts'
import { oldestDueDeliveryAge } from '../services/webhooks/deliveries.ts'

export interface Metrics {
  ordersCreated: Counter
  authFailures: Counter<'cause'>
  rateLimited: Counter
  idempotentReplays: Counter
  webhookDeliveries: Counter<'outcome'>
  reservationsCreated: Counter
  reservationsEnded: Counter<'how'>
}

declare module 'fastify' {
  interface FastifyInstance { metrics: Metrics }
}

export default fp(async function metricsPlugin (app) {
  // A registry per app, so several apps in one process (tests, the benchmark) do not collide.
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames: ['route', 'method', 'status'], registers: [registry] })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests',
    labelNames: ['route', 'method'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry]
  })
  const metrics: Metrics = {
    ordersCreated: new Counter({ name: 'storefront_orders_created_total', help: 'Orders created', registers: [registry] }),
    authFailures: new Counter({ name: 'storefront_auth_failures_total', help: 'Requests refused for their API key, by cause', labelNames: ['cause'], registers: [registry] }),
    rateLimited: new Counter({ name: 'storefront_rate_limited_total', help: 'Requests answered 429', registers: [registry] }),
    idempotentReplays: new Counter({ name: 'storefront_idempotent_replays_total', help: 'Create-order requests answered from a stored response', registers: [registry] }),
    webhookDeliveries: new Counter({
      name: 'storefront_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, retried later), failed (the last retry failed), released (given back at shutdown)',
      labelNames: ['outcome'],
      registers: [registry]
    }),
    reservationsCreated: new Counter({ name: 'storefront_reservations_created_total', help: 'Stock reservations made (holds)', registers: [registry] }),
    reservationsEnded: new Counter({ name: 'storefront_reservations_ended_total', help: 'Reservations ended, by how: released (by the integrator) or expired (by the sweep, units given back)', labelNames: ['how'], registers: [registry] })
  }
  const holds = new Gauge({ name: 'storefront_reservations_active', help: 'Active reservations across every key, and the units they hold from tracked stock', labelNames: ['measure'], registers: [registry] })
  const oldestDue = new Gauge({ name: 'storefront_webhook_oldest_due_seconds', help: 'Age of the oldest webhook delivery that is due and not yet attempted (0 when none waits)', registers: [registry] })
  const pool = new Gauge({ name: 'storefront_db_pool_connections', help: 'Database pool: max, open and active connections', labelNames: ['state'], registers: [registry] })
  // Read from the database's own counts at each scrape.
  const catalogReads = new Counter({
    name: 'storefront_db_catalog_reads_total',
    help: 'Catalogue reads (products, categories, brands) that reached a database, by the database that answered: primary, replica1…',
    labelNames: ['database'],
    registers: [],
    collect () {
      this.reset()
      for (const [database, count] of Object.entries(app.database.readStats().reads)) this.inc({ database }, count)
    }
  })
  registry.registerMetric(catalogReads)
  const replicaUp = new Gauge({ name: 'storefront_db_replica_up', help: 'Whether the replica answered its last sample (1) or not (0)', labelNames: ['replica'], registers: [registry] })
  const replicaLag = new Gauge({ name: 'storefront_db_replica_lag_bytes', help: 'WAL the primary had written that the replica had not replayed, at the last sample', labelNames: ['replica'], registers: [registry] })
  const replicaDelay = new Gauge({ name: 'storefront_db_replica_replay_delay_seconds', help: 'Time since the last transaction the replica replayed was committed (grows while the primary is idle)', labelNames: ['replica'], registers: [registry] })
  app.decorate('metrics', metrics)

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched'
    requests.inc({ route, method: request.method, status: reply.statusCode })
    if (reply.statusCode === 429) metrics.rateLimited.inc()
    duration.observe({ route, method: request.method }, reply.elapsedTime / 1000)
  })

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    try {
      const stats = await app.database.poolStats()
      for (const [state, value] of Object.entries(stats)) pool.set({ state }, value)
    } catch (err) {
      request.log.warn({ err }, 'metrics: database pool statistics unavailable')
    }
    try {
      oldestDue.set(await oldestDueDeliveryAge(app.database))
    } catch (err) {
      request.log.warn({ err }, 'metrics: webhook delivery age unavailable')
    }
    try {
      const totals = await activeHolds(app.stock)
      holds.set({ measure: 'reservations' }, totals.reservations)
      holds.set({ measure: 'units' }, totals.units)
    } catch (err) {
      request.log.warn({ err }, 'metrics: active reservations unavailable')
    }
    for (const replica of app.database.readStats().replicas) {
      replicaUp.set({ replica: replica.name }, replica.reachable ? 1 : 0)
      if (replica.lagBytes !== null) replicaLag.set({ replica: replica.name }, replica.lagBytes)
      if (replica.replayDelaySeconds !== null) replicaDelay.set({ replica: replica.name }, replica.replayDelaySeconds)
    }
    return reply.type(registry.contentType).send(await registry.metrics())
  })
}, { name: 'metrics', dependencies: ['database'] })
