// Each instance's delivery worker: it claims the deliveries that are due (up to its
// concurrency), attempts them without waiting over connections kept alive per endpoint
// (attempt.ts), and records the outcomes in batches. It claims again at once whenever an
// attempt ends, a claim came back full or this instance published events (wake); the timer
// only polls while idle, for what other instances published and for retries that come due,
// so a busy instance keeps pace with its receivers. Outcomes are written one statement at a
// time: those that end while a write is under way go together in the next. Claims are
// leases, so several instances never attempt the same delivery at once and one that dies
// mid-attempt leaves it to another when the lease ends. On stop it claims nothing more,
// waits for attempts in flight, and gives back unattempted those it cannot finish in time.
import type { Database } from '../../db/client.ts'
import { claimDeliveries, recordOutcomes, releaseDelivery, type AttemptOutcome as Outcome, type ClaimedDelivery } from '../../db/webhooks.ts'
import { eventIdOf } from '../../lib/event-id.ts'
import { signatureHeader } from '../../lib/webhook-signature.ts'
import { DeliveryClient, type AttemptResult } from './attempt.ts'
import type { WebhookUrlPolicy } from './url-policy.ts'

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'released'

export interface WorkerOptions {
  policy: WebhookUrlPolicy
  pollMs: number
  concurrency: number
  leaseMs: number
  timeoutMs: number
  maxResponseBytes: number
  /** How long an idle connection to an endpoint is kept for its next delivery. */
  keepAliveMs: number
  /** The wait before each retry, ms; after the last the delivery has failed. */
  retryMs: readonly number[]
  /** Each wait is moved by up to this fraction either way, so retries of many deliveries spread out. */
  jitter: number
  disableAfterMs: number
  onOutcome?: (outcome: AttemptOutcome) => void
  onError?: (err: unknown, what: string) => void
}

/** The body of a delivery: the same on every attempt, so the receiver can deduplicate on webhook-id. */
export function deliveryBody (claim: Pick<ClaimedDelivery, 'position' | 'type' | 'resourceId' | 'data' | 'occurredAt'>): string {
  return JSON.stringify({
    type: claim.type,
    timestamp: claim.occurredAt.toISOString(),
    data: { id: eventIdOf(claim.position), resourceId: claim.resourceId, ...claim.data }
  })
}

export function disabledReasonFor (disableAfterMs: number): string {
  const hours = disableAfterMs / 3_600_000
  const span = hours >= 24 && Number.isInteger(hours / 24) ? `${hours / 24} days` : hours >= 1 ? `${+hours.toFixed(1)} hours` : `${Math.round(disableAfterMs / 1000)} seconds`
  return `Disabled automatically: no delivery succeeded for ${span} while deliveries failed`
}

interface InFlight { claim: ClaimedDelivery, abort: AbortController, done: Promise<void> }

/**
 * Deliveries held per slot of concurrency, in flight or claimed and waiting for a slot: a
 * claim's round trip is hidden behind the attempts of the one before, however slow it is.
 */
const QUEUED_PER_SLOT = 2

/** Outcomes waiting to be written, per slot of concurrency, before claiming pauses. */
const UNWRITTEN_PER_SLOT = 4

interface Waiting { outcome: Outcome, resolve: (recorded: boolean) => void, reject: (err: unknown) => void }

export class WebhookWorker {
  readonly #database: Database
  readonly #options: WorkerOptions
  readonly #inFlight = new Map<string, InFlight>()
  /** Outcomes not yet written (their attempts have ended). */
  readonly #recording = new Set<Promise<void>>()
  /** Claimed, waiting for a free slot: the next claim runs while these are attempted. */
  readonly #queued: ClaimedDelivery[] = []
  #timer: NodeJS.Timeout | undefined
  #polling: Promise<number> | null = null
  /** Set when something asked for a claim while one was under way: claim again after it. */
  #again = false
  #stopping = false
  /** Outcomes waiting for the next write; `#writing` is the write under way. */
  #outcomes: Waiting[] = []
  #writing = false
  readonly #client: DeliveryClient

  constructor (database: Database, options: WorkerOptions) {
    this.#database = database
    this.#options = options
    this.#client = new DeliveryClient({ policy: options.policy, connectTimeoutMs: options.timeoutMs, keepAliveMs: options.keepAliveMs })
  }

  /** Connections opened to endpoints so far (each checked by the URL policy); reuse keeps it low. */
  get connections (): number {
    return this.#client.connections
  }

  /** Claims at once rather than at the next poll: this instance has just queued deliveries. Nothing before `start` (an instance that does not deliver). */
  wake (): void {
    if (this.#timer !== undefined) this.#pump()
  }

  get inFlight (): number {
    return this.#inFlight.size
  }

  /** Polls every `pollMs` while idle; `stop` ends it (the app's background plugin calls both). */
  start (): void {
    this.#timer = setInterval(() => { this.#pump() }, this.#options.pollMs)
  }

  /** Claims what is due and starts attempting it; resolves once claimed (not once attempted). */
  poll (): Promise<number> {
    if (this.#polling !== null || this.#stopping) return Promise.resolve(0)
    const polling = this.#claim().finally(() => { this.#polling = null })
    this.#polling = polling
    return polling
  }

  /**
   * Claims again at once, coalesced: while a claim is under way it only asks for another
   * after it. Keeps claiming while claims come back full (more may be due) and there is room;
   * a claim that fails waits for the timer, so an outage is not polled in a tight loop.
   */
  #pump (): void {
    if (this.#stopping) return
    if (this.#polling !== null) {
      this.#again = true
      return
    }
    this.#again = false
    const room = this.#room()
    if (room <= 0) return
    this.poll().then((claimed) => {
      if (this.#again || (claimed >= room && claimed > 0)) this.#pump()
    }, (err: unknown) => this.#options.onError?.(err, 'claiming deliveries'))
  }

  /**
   * How many more deliveries to claim: free slots, none while outcomes pile up unwritten
   * (a slow or unreachable database), so memory stays bounded and nothing outlives its lease.
   */
  #room (): number {
    if (this.#recording.size >= this.#options.concurrency * UNWRITTEN_PER_SLOT) return 0
    return QUEUED_PER_SLOT * this.#options.concurrency - this.#inFlight.size - this.#queued.length
  }

  async #claim (): Promise<number> {
    const room = this.#room()
    if (room <= 0) return 0
    const claims = await claimDeliveries(this.#database.db, room, this.#options.leaseMs)
    this.#queued.push(...claims)
    this.#drain()
    return claims.length
  }

  /** Starts queued deliveries while slots are free. */
  #drain (): void {
    while (!this.#stopping && this.#inFlight.size < this.#options.concurrency && this.#queued.length > 0) this.#launch(this.#queued.shift()!)
  }

  #launch (claim: ClaimedDelivery): void {
    const abort = new AbortController()
    const done = this.#attempt(claim, abort.signal)
      .catch((err: unknown) => this.#options.onError?.(err, `delivering ${eventIdOf(claim.position)}`))
      .finally(() => {
        this.#inFlight.delete(claim.id)
        this.#drain()
        this.#pump()
      })
    this.#inFlight.set(claim.id, { claim, abort, done })
  }

  async #attempt (claim: ClaimedDelivery, signal: AbortSignal): Promise<void> {
    const id = eventIdOf(claim.position)
    const body = deliveryBody(claim)
    const at = new Date()
    const timestamp = Math.floor(at.getTime() / 1000)
    const result = await this.#client.attempt({
      url: claim.url,
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(claim.secrets, id, timestamp, body)
      }
    }, { timeoutMs: this.#options.timeoutMs, maxResponseBytes: this.#options.maxResponseBytes, signal })
    // Only an attempt the abort itself ended is given back: one that finished first is recorded.
    if (result.aborted === true) {
      // Cut short by the shutdown: not an attempt the receiver should be blamed for.
      await releaseDelivery(this.#database.db, claim)
      this.#options.onOutcome?.('released')
      return
    }
    // The slot is free once the receiver answered: the outcome is written with the next batch
    // while other attempts go on (the lease keeps the delivery this instance's until then).
    this.#track(this.#record(claim, result, at).catch((err: unknown) => this.#options.onError?.(err, `recording ${id}`)))
  }

  /** An outcome being written: claims pause while too many are, and stop waits for them all. */
  #track (recording: Promise<void>): void {
    this.#recording.add(recording)
    recording.finally(() => {
      this.#recording.delete(recording)
      this.#pump()
    }).catch(() => {})
  }

  /**
   * Records the outcome, retrying while the database is unreachable and the lease holds:
   * past the lease another instance attempts the delivery again (at least once).
   */
  async #record (claim: ClaimedDelivery, result: AttemptResult, at: Date): Promise<void> {
    const deadline = at.getTime() + this.#options.leaseMs
    for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
      try {
        const outcome = await this.#write(claim, result, at)
        this.#options.onOutcome?.(outcome)
        return
      } catch (err) {
        if (this.#stopping || Date.now() + wait > deadline) throw err
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
    }
  }

  async #write (claim: ClaimedDelivery, result: AttemptResult, at: Date): Promise<AttemptOutcome> {
    if (result.ok) {
      // Not recorded when the lease was lost: the new holder attempts it again (at least once).
      await this.#recordOutcome({ claim, ok: true, status: result.status, at, nextAttemptAt: null })
      return 'succeeded'
    }
    const delay = this.#options.retryMs[claim.attempts]
    const nextAttemptAt = delay === undefined ? null : new Date(Date.now() + this.#jittered(delay))
    await this.#recordOutcome({ claim, ok: false, status: result.status, at, nextAttemptAt })
    return nextAttemptAt === null ? 'failed' : 'retrying'
  }

  /**
   * Adds an outcome to the next write: at once when none is under way, else right after it,
   * with whatever else ended meanwhile. Settles once written (or failed, so the caller
   * retries it like any write); stop waits for it, as every in-flight attempt waits for its
   * outcome to be written.
   */
  #recordOutcome (outcome: Outcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#outcomes.push({ outcome, resolve, reject })
      this.#flush()
    })
  }

  #flush (): void {
    if (this.#writing || this.#outcomes.length === 0) return
    const batch = this.#outcomes
    this.#outcomes = []
    this.#writing = true
    const rule = { disableAfterMs: this.#options.disableAfterMs, reason: disabledReasonFor(this.#options.disableAfterMs) }
    recordOutcomes(this.#database.db, batch.map((w) => w.outcome), rule).then(
      ({ recorded }) => { for (const w of batch) w.resolve(recorded.has(w.outcome.claim.id)) },
      (err: unknown) => { for (const w of batch) w.reject(err) }
    ).finally(() => {
      this.#writing = false
      this.#flush()
    })
  }

  #jittered (ms: number): number {
    return Math.round(ms * (1 + this.#options.jitter * (2 * Math.random() - 1)))
  }

  /**
   * Stops claiming, gives back what was claimed but not started, and waits up to `waitMs`
   * for the attempts in flight; those still running then are aborted and given back (their
   * lease cleared, the attempt not counted).
   */
  async stop (waitMs: number): Promise<void> {
    this.#stopping = true
    clearInterval(this.#timer)
    // A claim under way finishes; what it claimed is queued, never started.
    await this.#polling?.catch(() => {})
    // Claimed but never started: given back at once, for another instance to take.
    await Promise.allSettled(this.#queued.splice(0).map(async (claim) => {
      await releaseDelivery(this.#database.db, claim)
      this.#options.onOutcome?.('released')
    }))
    const all = () => Promise.allSettled([...this.#inFlight.values()].map((f) => f.done))
    let timer: NodeJS.Timeout | undefined
    await Promise.race([all(), new Promise((resolve) => { timer = setTimeout(resolve, waitMs) })])
    clearTimeout(timer)
    for (const flight of this.#inFlight.values()) flight.abort.abort()
    await all()
    await Promise.allSettled([...this.#recording])
    await this.#client.close()
  }
}
