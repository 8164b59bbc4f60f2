// The one list of this instance's background work: every timer and loop the app runs. None of
// it starts before the app is ready (what must be loaded before the first request is read
// once by plugins/state.ts), and nothing else in the app starts a timer of its own. Closing
// stops the work in the order of the list below, each part finished before the next:
//
// 1. the webhook worker, which takes new work: it stops claiming as soon as closing begins
//    (preClose), so its wait for the attempts in flight runs beside the server's drain within
//    SHUTDOWN_TIMEOUT; what it cannot finish in time it gives back;
// 2. the periodic jobs (publishing, retention, the discount sweep, the list pages' rebuild,
//    the reservation expiry, idempotency cleanup): the timer cleared, a run under way awaited;
// 3. the state poll and the replicas' sampling, which nothing reads once requests have ended;
// 4. the keys' last-use flush, with one last flush: the server has answered its last
//    request by then, so no use goes unwritten.
// The database is closed after all of this by whoever opened it (plugins/database.ts); Redis
// by its own plugin, which owns that connection.
//
// The timers are not unref'd: close clears every one, and one left behind would keep the
// process alive, where a test sees it (test/plugins/background.test.ts).
import fp from 'fastify-plugin'
import { markDiscountBoundaries, rebuildKeptPages, renderMissingDocuments } from '../services/catalog.ts'
import { forgetOldChanges, publishChanges } from '../services/changes.ts'
import { deleteExpiredReplays } from '../services/place-order.ts'
import { expireLapsedReservations } from '../services/reservations.ts'
import { refreshState } from '../services/store.ts'
import { forgetOldDeliveries } from '../services/webhooks/deliveries.ts'

declare module 'fastify' {
  interface FastifyInstance {
    background: BackgroundWork
  }
}

export interface BackgroundTask {
  readonly name: string
  start: () => void
  /** Resolves once nothing of the task runs any more. Called at most once. */
  stop: () => Promise<void>
  /** Begins stopping when closing begins (preClose) rather than once the server has drained. */
  stopsEarly?: boolean
}

/**
 * A task that runs `run` every `everyMs`; a run that outlasts the interval is not overlapped
 * by the next. With `runOnStop`, stopping runs it once more, after the last scheduled run.
 */
export function every (name: string, everyMs: number, run: () => Promise<unknown>, options: { onError: (err: unknown) => void, runOnStop?: boolean }): BackgroundTask {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | null = null
  const runOnce = () => run().then(() => {}, options.onError)
  return {
    name,
    start () {
      timer = setInterval(() => {
        if (running !== null) return
        running = runOnce().finally(() => { running = null })
      }, everyMs)
    },
    async stop () {
      clearInterval(timer)
      await running
      if (options.runOnStop === true) await runOnce()
    }
  }
}

export class BackgroundWork {
  readonly #tasks: BackgroundTask[] = []
  readonly #stops = new Map<BackgroundTask, Promise<void>>()
  readonly #onError: (err: unknown, task: string) => void
  #started = false
  /** The tasks' names in the order they finished stopping. */
  readonly stopped: string[] = []

  constructor (onError: (err: unknown, task: string) => void) {
    this.#onError = onError
  }

  /** Adds a task; tasks stop in the order they were added and start in the reverse order. */
  add (task: BackgroundTask): void {
    this.#tasks.push(task)
  }

  get names (): string[] {
    return this.#tasks.map((task) => task.name)
  }

  start (): void {
    if (this.#started) return
    this.#started = true
    // Whatever takes new work starts last, once all it relies on runs.
    for (const task of [...this.#tasks].reverse()) task.start()
  }

  /** Begins stopping the tasks that stop early; `stop` waits for them in their turn. */
  beginStopping (): void {
    if (!this.#started) return
    // Not awaited here: `stop` waits for it in its turn (and it reports its own failure).
    for (const task of this.#tasks) if (task.stopsEarly === true) this.#stop(task).catch(() => {})
  }

  async stop (): Promise<void> {
    if (!this.#started) return
    for (const task of this.#tasks) {
      await this.#stop(task)
      this.stopped.push(task.name)
    }
  }

  // A task that fails to stop is reported and the next one is stopped all the same.
  #stop (task: BackgroundTask): Promise<void> {
    let stopping = this.#stops.get(task)
    if (stopping === undefined) {
      stopping = task.stop().catch((err: unknown) => this.#onError(err, `stopping ${task.name}`))
      this.#stops.set(task, stopping)
    }
    return stopping
  }
}

/** How much of the shutdown timeout the webhook worker keeps for giving back unfinished deliveries. */
const RELEASE_MARGIN_MS = 1000

export default fp(async function backgroundPlugin (app) {
  const { config, database, store, catalogCache, apiKeys, stock } = app
  const { worker } = app.webhooks
  const report = (task: string) => (err: unknown) => app.log.warn({ err }, `${task} failed`)
  const background = new BackgroundWork((err, task) => report(task)(err))
  const periodic = (name: string, everyMs: number, run: () => Promise<unknown>, options: { runOnStop?: boolean } = {}) =>
    background.add(every(name, everyMs, run, { onError: report(name), ...options }))

  // An instance that serves the API may leave delivery to instances of its own
  // (WEBHOOK_DELIVERY=false): under an order load the one thread that answers the orders
  // would otherwise deliver their events too, and fall behind.
  if (config.WEBHOOK_DELIVERY) {
    background.add({
      name: 'webhook worker',
      start: () => worker.start(),
      stop: () => worker.stop(Math.max(0, config.SHUTDOWN_TIMEOUT - RELEASE_MARGIN_MS)),
      stopsEarly: true
    })
  }
  // Publishing also queues the events' webhook deliveries; retention deletes published events
  // and finished deliveries in batches. Each job is safe on every instance of a fleet at once
  // (publishing runs on one at a time).
  periodic('event publishing', config.EVENT_PUBLISH_MS, async () => {
    // The deliveries it queued are claimed at once here; other instances find them at their poll.
    if (await publishChanges(database) > 0) worker.wake()
  })
  periodic('changes retention', config.CHANGES_PRUNE_MS, () => forgetOldChanges(database, config.CHANGES_RETENTION_DAYS))
  periodic('webhook deliveries retention', config.CHANGES_PRUNE_MS, () => forgetOldDeliveries(database, config.CHANGES_RETENTION_DAYS))
  periodic('discount sweep', config.DISCOUNT_SWEEP_MS, () => markDiscountBoundaries(stock, config.DISCOUNT_SWEEP_LOOKBACK_MS))
  // A store upgraded to the read model has products without documents (reads render them on
  // the fly meanwhile): rendered in the background until a run finds none left.
  let documentsComplete = false
  periodic('document backfill', config.DISCOUNT_SWEEP_MS, async () => {
    if (!documentsComplete) documentsComplete = await renderMissingDocuments(stock) === 0
  })
  // The unfiltered list's pages kept whole (a page a row): those whose products changed are
  // read from the documents until this builds them again, a bounded batch a run.
  periodic('list pages rebuild', config.LIST_PAGES_REBUILD_MS, () => rebuildKeptPages(database, config.LIST_PAGES_REBUILD_BATCH))
  // Reservations past their expiresAt, from the database (not a timer per hold), so a restart
  // or another instance loses none; each sweep claims with SKIP LOCKED, so instances share the work.
  periodic('reservation expiry', config.RESERVATION_SWEEP_MS, async () => {
    const expired = await expireLapsedReservations(stock, config.RESERVATION_SWEEP_BATCH)
    if (expired > 0) app.metrics.reservationsEnded.inc({ how: 'expired' }, expired)
  })
  periodic('idempotency cleanup', config.IDEMPOTENCY_CLEANUP_MS, () => deleteExpiredReplays(database))
  periodic('state poll', config.STATE_POLL_MS, () => refreshState(database, store, catalogCache))
  // Which replicas may answer catalogue reads (none configured: a run that does nothing).
  periodic('replica sampling', config.STATE_POLL_MS, async () => {
    for (const line of await database.sampleReplicas()) app.log.warn(line)
  })
  periodic('key last-use flush', config.KEY_LAST_USED_FLUSH_MS, () => apiKeys.flushLastUsed(), { runOnStop: true })

  app.decorate('background', background)
  app.addHook('onReady', async () => background.start())
  app.addHook('preClose', async () => background.beginStopping())
  app.addHook('onClose', async () => background.stop())
}, { name: 'background', dependencies: ['database', 'state', 'webhooks', 'metrics'] })
