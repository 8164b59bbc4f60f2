// order-create-webhooks: the same order load with webhook endpoints subscribed to every
// event, delivered to local receivers (bench/receivers.ts), and how long each event took
// from its change to each receiver.
//
// When an event "happens": it exists from its transaction's commit. change_events keeps two
// times around that instant: occurred_at (now() of the transaction, i.e. its start, so a
// little before the commit: by the transaction's own duration, at most the request's
// latency) and published_at (when the publisher, every EVENT_PUBLISH_MS, gave it its feed
// position and queued its deliveries: after the commit). Latency is measured from
// occurred_at, which is also the payload's `timestamp` a receiver sees: it counts the whole
// way from the change (a slight overstatement, never an understatement), and the aim is
// judged on it. The part from published_at is reported beside it: what the delivery worker
// (its poll every WEBHOOK_POLL_MS, its WEBHOOK_CONCURRENCY) adds after the publisher.
// Receipt times are the receivers' wall clock, the database's timestamps its own: the same
// clock only when the database is local (a remote one's skew is in the figures).
//
// Then, with PostgreSQL, a burst: BURST_EVENTS product events inserted at once (unpublished,
// as a change would write them), so each receiver must get them all: deliveries a second from
// the insert to the last receipt (publishing included) and the app's CPU per delivery then,
// the worker's capacity rather than the order load's pace.
//
// Which events each receiver must get: every event published after the endpoints were
// created (positions after the feed's last one then; nothing is written or published at that
// moment) that the bench key may see, up to the last one published once the load has been
// worked off. With PostgreSQL they are read from change_events (both times, to the
// microsecond); with PGlite, whose data is in the app's process, from the changes feed
// (occurredAt, to the millisecond; no published_at).
import { setTimeout as sleep } from 'node:timers/promises'
import type postgres from 'postgres'
import { cpuTimeOf, startReceivers, type ReceiverLog, type Runtime } from './processes.ts'

export interface WebhookBenchOptions {
  runtime: Runtime
  baseUrl: string
  key: string
  /** The process that delivers (the app, or with --delivery-instance the instance of its own): its CPU per delivery is reported. */
  deliveringPid: number
  /** The bench key's id (events of other keys are not its endpoints' business); with PostgreSQL. */
  keyId?: string
  monitor?: postgres.Sql | undefined
  receivers: number
  /** Longest wait, after the load was worked off, for every delivery. */
  waitLimitMs: number
  /** Registers what to undo if the bench stops midway. */
  onCleanup: (fn: () => Promise<void>) => void
}

/** An event a receiver must get: when it occurred and (with PostgreSQL) when it was published, ms since the epoch. */
interface Expected { occurred: number, published?: number }

/** The feed's publication lag (READ_SETTLE_MS 750 ms, publishing every 50 ms) and some room: after it a quiet feed shows everything. */
const FEED_SETTLE_MS = 1500
const POLL_MS = 250
/** Events of the burst (each to every receiver). */
const BURST_EVENTS = 3000

async function api (options: WebhookBenchOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${options.baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': options.key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`)
  return text === '' ? null : JSON.parse(text)
}

/** Waits until every committed event is published, then returns the last position (PostgreSQL). */
async function quietHead (monitor: postgres.Sql): Promise<number> {
  const started = performance.now()
  for (;;) {
    const [row] = await monitor<Array<{ waiting: boolean, head: number }>>`
      select exists (select 1 from change_events where position is null) as waiting, coalesce(max(position), 0)::float8 as head from change_events`
    if (!row!.waiting || performance.now() - started > 30_000) return row!.head
    await sleep(50)
  }
}

/** The feed's head once everything published has settled (PGlite: the feed is all there is to read). */
async function feedHead (options: WebhookBenchOptions): Promise<number> {
  await sleep(FEED_SETTLE_MS)
  const head = await api(options, 'GET', '/external/v1/changes?limit=0') as { nextCursor: string }
  return Number(head.nextCursor.replace(/^evt_/, ''))
}

/** The events after `after` the bench key may see, up to the feed's end now. */
async function eventsAfter (options: WebhookBenchOptions, after: number): Promise<Map<number, Expected>> {
  const events = new Map<number, Expected>()
  if (options.monitor) {
    await quietHead(options.monitor)
    const rows = await options.monitor<Array<{ position: number, occurred: number, published: number }>>`
      select position::float8 as position, extract(epoch from occurred_at)::float8 * 1000 as occurred, extract(epoch from published_at)::float8 * 1000 as published
      from change_events where position > ${after} and (api_key_id is null or api_key_id = ${options.keyId ?? null}::uuid)`
    for (const r of rows) events.set(r.position, { occurred: r.occurred, published: r.published })
    return events
  }
  await sleep(FEED_SETTLE_MS)
  for (let cursor = `evt_${after}`; ;) {
    const page = await api(options, 'GET', `/external/v1/changes?after=${cursor}&limit=500`) as { items: Array<{ id: string, occurredAt: string }>, nextCursor: string, hasMore: boolean }
    for (const e of page.items) events.set(Number(e.id.replace(/^evt_/, '')), { occurred: Date.parse(e.occurredAt) })
    cursor = page.nextCursor
    if (!page.hasMore) return events
  }
}

const percentile = (sorted: number[], p: number) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!

/** What the receivers got against what they should have. */
function tally (expected: Map<number, Expected>, logs: ReceiverLog[]) {
  const latencies: number[] = []
  const fromPublished: number[] = []
  /** published_at − occurred_at of each event: its transaction's own time, then the wait for the publisher. */
  const publishLag = [...expected.values()].flatMap((e) => (e.published === undefined ? [] : [e.published - e.occurred])).sort((a, b) => a - b)
  let duplicates = 0
  let undelivered = 0
  let unexpected = 0
  let malformed = 0
  let first = Infinity
  let last = -Infinity
  for (const log of logs) {
    malformed += log.malformed
    const firstReceipt = new Map<number, number>()
    log.positions.forEach((position, i) => {
      const at = log.times[i]!
      if (!expected.has(position)) unexpected++
      else if (firstReceipt.has(position)) duplicates++
      else firstReceipt.set(position, at)
    })
    for (const [position, event] of expected) {
      const at = firstReceipt.get(position)
      if (at === undefined) {
        undelivered++
        continue
      }
      latencies.push(at - event.occurred)
      if (event.published !== undefined) fromPublished.push(at - event.published)
      first = Math.min(first, at)
      last = Math.max(last, at)
    }
  }
  latencies.sort((a, b) => a - b)
  fromPublished.sort((a, b) => a - b)
  return { latencies, fromPublished, publishLag, duplicates, undelivered, unexpected, malformed, first, last }
}

type Receivers = Awaited<ReturnType<typeof startReceivers>>

/**
 * The burst: BURST_EVENTS events at once, and how fast every receiver got them (`before`:
 * what each had received until then).
 */
async function runBurst (monitor: postgres.Sql, options: WebhookBenchOptions, receivers: Receivers, before: number[]): Promise<Record<string, number>> {
  const cpuBefore = cpuTimeOf(options.deliveringPid)
  const insertedAt = performance.timeOrigin + performance.now()
  await monitor`insert into change_events (type, resource_id, data) select 'product.updated', gen_random_uuid(), '{}'::jsonb from generate_series(1, ${BURST_EVENTS})`
  const started = performance.now()
  let counts = await receivers.counts()
  while (counts.some((n, i) => n - before[i]! < BURST_EVENTS) && performance.now() - started < options.waitLimitMs) {
    await sleep(POLL_MS / 5)
    counts = await receivers.counts()
  }
  const cpuMs = cpuTimeOf(options.deliveringPid) - cpuBefore
  const logs = await receivers.report()
  const delivered = logs.reduce((n, log, i) => n + log.positions.length - before[i]!, 0)
  const last = Math.max(...logs.map((log) => log.times.at(-1) ?? 0))
  const first = Math.min(...logs.map((log, i) => log.times[before[i]!] ?? Infinity))
  const seconds = (last - insertedAt) / 1000
  return {
    burstEvents: BURST_EVENTS,
    burstDelivered: delivered,
    burstDeliveriesPerSecond: delivered / seconds,
    burstSeconds: seconds,
    /** From the first receipt: without the publisher's first run. */
    burstFromFirstPerSecond: delivered > 1 && last > first ? (delivered - 1) / ((last - first) / 1000) : NaN,
    burstAppCpuMsPerDelivery: cpuMs / Math.max(1, delivered)
  }
}

/**
 * Starts the receivers and subscribes an endpoint to each (every event type); returns what
 * ends the scenario once its load has been worked off: waits for every delivery (up to the
 * limit), deletes the endpoints, stops the receivers, and returns the figures.
 */
export async function setUpWebhooks (options: WebhookBenchOptions): Promise<() => Promise<Record<string, number>>> {
  const receivers = await startReceivers(options.runtime, options.receivers)
  options.onCleanup(receivers.stop)
  const endpoints: string[] = []
  for (const port of receivers.ports) {
    const created = await api(options, 'POST', '/external/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['*'] }) as { id: string }
    endpoints.push(created.id)
  }
  // Read after the endpoints committed, with nothing waiting to be published: every later
  // position is published by a transaction that sees the endpoints, so it queues their deliveries.
  const after = options.monitor ? await quietHead(options.monitor) : await feedHead(options)

  return async () => {
    const loadDone = Date.now()
    const cpuBefore = cpuTimeOf(options.deliveringPid)
    const expected = await eventsAfter(options, after)
    const want = expected.size * options.receivers
    const started = performance.now()
    let logs: ReceiverLog[] = []
    for (;;) {
      const counts = await receivers.counts()
      if (counts.every((n) => n >= expected.size)) {
        logs = await receivers.report()
        if (tally(expected, logs).undelivered === 0) break
      }
      if (performance.now() - started > options.waitLimitMs) {
        logs = await receivers.report()
        break
      }
      await sleep(POLL_MS)
    }
    const drainCpuMs = cpuTimeOf(options.deliveringPid) - cpuBefore
    const waitedMs = performance.now() - started
    const t = tally(expected, logs)
    const burst = options.monitor ? await runBurst(options.monitor, options, receivers, logs.map((log) => log.positions.length)) : {}
    for (const id of endpoints) await api(options, 'DELETE', `/external/v1/webhooks/${id}`)
    await receivers.stop()
    const delivered = want - t.undelivered
    // Deliveries made after the load had been worked off (and the expected events read): the worker alone, its CPU per delivery.
    const drained = logs.reduce((n, log) => n + log.times.filter((at) => at >= loadDone).length, 0)
    return {
      events: expected.size,
      receivers: options.receivers,
      expected: want,
      delivered,
      undelivered: t.undelivered,
      duplicates: t.duplicates,
      unexpected: t.unexpected + t.malformed,
      latencyP50Ms: percentile(t.latencies, 0.5),
      latencyP99Ms: percentile(t.latencies, 0.99),
      latencyMaxMs: t.latencies.at(-1) ?? NaN,
      latencyMinMs: t.latencies[0] ?? NaN,
      ...(t.fromPublished.length
        ? {
            publishedP50Ms: percentile(t.fromPublished, 0.5),
            publishedP99Ms: percentile(t.fromPublished, 0.99),
            publishLagP50Ms: percentile(t.publishLag, 0.5),
            publishLagP99Ms: percentile(t.publishLag, 0.99)
          }
        : {}),
      /** Deliveries a second from the first receipt to the last: the worker's pace while it had work. */
      deliveriesPerSecond: delivered > 1 && t.last > t.first ? (delivered - 1) / ((t.last - t.first) / 1000) : NaN,
      waitSeconds: waitedMs / 1000,
      drained,
      ...(drained > 0 ? { drainAppCpuMsPerDelivery: drainCpuMs / drained } : {}),
      ...burst
    }
  }
}
