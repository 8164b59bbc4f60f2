// Every stock write, end to end: placing an order, holding, releasing, expiring, cancelling
// an order and an import's stock phase all run through `StockKeeper.write`. It claims the
// Idempotency-Key first (a retry gets the first answer), runs the work in one transaction on
// a `Shelf` (which locks the products before any stock change, in the order db/stock.ts sets
// down, and renders their documents after the last one), retries that transaction when
// PostgreSQL reports contention (a deadlock or a serialization failure), and tells the
// instance's cache which products moved once it has committed. The pricing of lines and the
// words of a refusal ("cannot be ordered", "cannot be held") are here too, so an order and a
// hold judge a line the same way.
import type { Database, Tx } from '../db/client.ts'
import { claimIdempotencyKey, findIdempotencyRecord, storeIdempotentResponse, type IdempotencyRecord } from '../db/idempotency.ts'
import {
  freeHeld, giveBackOrder, insertHoldLines, keepGenericPlans, loadSellables, lockProducts, ProductLocks, reapplyHolds, refreshProducts, rewriteDocuments,
  setImportedStock, takeStock, writeDocuments, type HoldLine, type ImportedStock, type SellableRow, type Sellables, type StockMove
} from '../db/stock.ts'
import { STOCK_RETRY } from '../config.ts'
import { apiError, type ErrorDetail, type LineFailureReason } from '../errors.ts'
import { errorCodes } from '../lib/database-failure.ts'
import { multiply, sellPriceCents, toCents, toDecimalText, type Cents } from '../lib/money.ts'
import type { OrderMode } from '../schemas/orders.ts'
import type { OrderLine } from './order-request.ts'
import { WriteDeadline } from './write-deadline.ts'

// numeric(12,2) holds up to 9,999,999,999.99.
export const MAX_AMOUNT_CENTS = 999_999_999_999

/** How a refusal words what cannot be done with a line, and which code it answers. */
export type StockVerb = 'ordered' | 'held'

const REFUSAL = { ordered: 'order_creation_failed', held: 'reservation_failed' } as const

/** A line's refusal, as an order and a hold both answer it (the code follows the verb). */
function refuse (verb: StockVerb, details: ErrorDetail[]) {
  // The first few lines in the message; every one of them in details.
  const shown = details.slice(0, 3).map((d) => d.message).join('; ')
  const message = details.length === 1 ? shown : `${details.length} lines cannot be ${verb}: ${shown}${details.length > 3 ? '; …' : ''}`
  return apiError(REFUSAL[verb], message, { details })
}

const lineFailure = (line: number, reason: LineFailureReason, message: string): ErrorDetail =>
  ({ path: `items[${line}]`, reason, message: `items[${line}]: ${message}` })

const outOfStock = (line: number, name: string, available: number): ErrorDetail =>
  ({ ...lineFailure(line, 'out_of_stock', `not enough stock for "${name}": ${available} available`), available })

function itemName (row: SellableRow): string {
  return row.option_names && row.option_names.length > 0 ? `${row.name} (${row.option_names.join(' / ')})` : row.name
}

export interface PricedItem { productId: string, combinationId: string | null, name: string, quantity: number, singlePrice: string, totalPrice: string, taken: number }

export interface PricedLines {
  /** The lines as sold, with the units each takes from tracked stock (0 until `Shelf.take`). */
  items: PricedItem[]
  total: Cents
  /** Tracked stock the lines take, one entry per stock row, in id order. */
  stock: Array<StockMove & { lines: number[] }>
}

/** Units a reservation holds for an order, per stock row (combination or product id). */
export type HeldUnits = ReadonlyMap<string, number>

/** The product ids and combination ids the lines name, each once. */
export function namedIds (lines: readonly OrderLine[]): [string[], string[]] {
  return [
    [...new Set(lines.map((l) => l.productId))],
    [...new Set(lines.flatMap((l) => (l.combinationId ? [l.combinationId] : [])))]
  ]
}

/**
 * Checks every line against the catalogue and prices it. An unknown product answers
 * invalid_item first; then every line that cannot be ordered (or held) is reported at once.
 * Units a reservation holds for these lines count as stock.
 */
export function priceLines (verb: StockVerb, lines: readonly OrderLine[], sellables: Sellables, now: Date, held: HeldUnits = new Map()): PricedLines {
  lines.forEach((line, i) => {
    if (!sellables.has(`p:${line.productId}`)) throw apiError('invalid_item', `items[${i}].productId matches no product`)
  })
  const failures = new Map<number, ErrorDetail>()
  // Lines of the same product or combination are checked against their summed quantity.
  const wanted = new Map<string, { row: SellableRow, quantity: number, lines: number[] }>()
  const names: string[] = []
  const items = lines.map((line, i) => {
    const { row, problem } = chooseRow(line, sellables)
    if (problem) failures.set(i, lineFailure(i, ...problem))
    names.push(itemName(row))
    const key = row.combination_id ?? row.product_id
    const entry = wanted.get(key) ?? { row, quantity: 0, lines: [] }
    entry.quantity += line.quantity
    entry.lines.push(i)
    wanted.set(key, entry)
    const singlePrice = sellPriceCents(toCents(row.price), row.discount, now)
    const totalPrice = multiply(singlePrice, line.quantity)
    if (totalPrice > MAX_AMOUNT_CENTS) throw apiError(REFUSAL[verb], `items[${i}]: the line total is larger than an order can hold`)
    return { productId: row.product_id, combinationId: row.combination_id, name: itemName(row), quantity: line.quantity, singlePrice, totalPrice }
  })
  for (const [id, { row, quantity, lines: at }] of wanted) {
    const available = row.quantity === null ? null : row.quantity + (held.get(id) ?? 0)
    if (available !== null && available < quantity) {
      for (const i of at) if (!failures.has(i)) failures.set(i, outOfStock(i, names[i]!, available))
    }
  }
  if (failures.size > 0) throw refuse(verb, [...failures.entries()].sort(([a], [b]) => a - b).map(([, f]) => f))

  const stock = [...wanted.entries()]
    .filter(([, w]) => w.row.quantity !== null)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([id, w]) => ({ owner: w.row.combination_id ? 'combinations' as const : 'products' as const, id, productId: w.row.product_id, quantity: w.quantity, lines: w.lines }))
  return {
    items: items.map((item) => ({ ...item, singlePrice: toDecimalText(item.singlePrice), totalPrice: toDecimalText(item.totalPrice), taken: 0 })),
    total: items.reduce((sum, item) => sum + item.totalPrice, 0),
    stock
  }
}

/** The row a line orders (its combination, when it names one of its product's) and why it cannot be ordered, if it cannot. */
function chooseRow (line: OrderLine, sellables: Sellables): { row: SellableRow, problem?: [LineFailureReason, string] } {
  const product = sellables.get(`p:${line.productId}`)!
  if (line.combinationId !== null) {
    const combination = sellables.get(`c:${line.combinationId}`)
    if (!combination || combination.owner_id !== line.productId) {
      return { row: product, problem: ['combination_mismatch', `combination ${line.combinationId} is not a combination of "${product.name}"`] }
    }
    if (!combination.owner_available) return { row: combination, problem: ['unavailable', `"${product.name}" is not available`] }
    if (!combination.is_available) return { row: combination, problem: ['unavailable', `"${itemName(combination)}" is not available`] }
    return { row: combination }
  }
  if (product.has_combinations) return { row: product, problem: ['combination_required', `"${product.name}" has combinations; send a combinationId`] }
  if (!product.is_available) return { row: product, problem: ['unavailable', `"${product.name}" is not available`] }
  return { row: product }
}

/**
 * One stock write's transaction: the products it locked, and what it changed. Stock changes
 * only after `lock` (or `adopt`); the documents of what changed are written by `finish`, once
 * every change is made. Statements whose answer the write does not need at once (the
 * decrements, the documents) are sent without waiting for it, so they travel with the next
 * one (one round trip for both); their outcome is checked by `settle` before the commit.
 */
export class Shelf {
  #locks: ProductLocks | null = null
  /** Products whose stock moved: refreshed (availability, updatedAt, event, document) at the end. */
  readonly #moved = new Set<string>()
  /** Products whose documents are rendered again at the end (an import wrote them, a price changed). */
  readonly #rewrite = new Set<string>()
  #finished = false
  /** Statements sent and not yet waited for, in the order they were sent. */
  readonly #sent: Array<Promise<unknown>> = []

  constructor (readonly tx: Tx, readonly now: Date) {
    this.#send(keepGenericPlans(tx))
  }

  /** Locks every product this write touches, in id order, at once (step 2 of the lock order). */
  async lock (productIds: Iterable<string>, options: { forDelete?: boolean } = {}): Promise<void> {
    await this.adopt(() => lockProducts(this.tx, productIds, options))
  }

  /** Takes the locks another way (without waiting: the sweeps); a write locks once. */
  async adopt (locking: () => Promise<ProductLocks>): Promise<ProductLocks> {
    if (this.#locks !== null) throw new Error('a stock write locks its products once')
    this.#locks = await locking()
    return this.#locks
  }

  get locks (): ProductLocks {
    if (this.#locks === null) throw new Error('stock changed before its products were locked')
    this.#open()
    return this.#locks
  }

  // For changes that may move nothing (a test key's): db/stock.ts still refuses any unit moved without its lock.
  get #locksIfAny (): ProductLocks {
    return this.#locks ?? new ProductLocks()
  }

  // A change after the documents were rendered would leave them stale.
  #open (): void {
    if (this.#finished) throw new Error('stock changed after its documents were rendered')
  }

  /**
   * Reads the rows the lines are priced from. A write that takes stock (`lock`) locks their
   * products first, in the same round trip: that is its one lock step. A test key's write
   * reads without locking (it takes nothing, so it waits for no one).
   */
  async load (lines: readonly OrderLine[], options: { lock: boolean }): Promise<Sellables> {
    const [productIds, combinationIds] = namedIds(lines)
    if (!options.lock) return (await loadSellables(this.tx, productIds, combinationIds, false)).sellables
    let sellables: Sellables = new Map()
    await this.adopt(async () => {
      const loaded = await loadSellables(this.tx, productIds, combinationIds, true)
      sellables = loaded.sellables
      return loaded.locks!
    })
    return sellables
  }

  /** Prices the lines (exact for the products this write locked). */
  price (verb: StockVerb, lines: readonly OrderLine[], sellables: Sellables, held?: HeldUnits): PricedLines {
    return priceLines(verb, lines, sellables, this.now, held)
  }

  /**
   * Takes the priced lines' tracked units for a live key (a test key takes none), beyond what
   * a reservation already holds for them; marks each line with the units it took. The
   * decrements are sent, not waited for (see the class).
   */
  take (priced: PricedLines, mode: OrderMode, held: HeldUnits = new Map()): void {
    if (mode !== 'live') return
    const takes = priced.stock
      .map((s) => ({ ...s, quantity: s.quantity - (held.get(s.id) ?? 0) }))
      .filter((s) => s.quantity > 0)
    this.#send(takeStock(this.tx, this.locks, takes).then((failed) => {
      // The stock was checked under the products' locks: nothing can have taken it since.
      if (failed !== null) throw new Error('stock taken under its lock by another transaction')
    }))
    for (const s of takes) this.#moved.add(s.productId)
    for (const s of priced.stock) for (const i of s.lines) priced.items[i]!.taken = priced.items[i]!.quantity
  }

  #send (statement: Promise<unknown>): void {
    // Its failure is reported by `settle`; until then it must not count as unhandled.
    statement.catch(() => {})
    this.#sent.push(statement)
  }

  /** Waits for every statement sent; the first that failed fails the write. */
  async settle (): Promise<void> {
    for (const statement of this.#sent.splice(0)) await statement
  }

  /**
   * A new reservation's lines: each holds the units its line took (none when untracked or for a
   * test key, which locks nothing). What a line holds is no part of a document: it may be
   * written after `finish`.
   */
  async holdLines (reservationId: string, priced: PricedLines): Promise<void> {
    const lines: HoldLine[] = priced.items.map((item) => ({ productId: item.productId, combinationId: item.combinationId, quantity: item.quantity, held: item.taken }))
    await insertHoldLines(this.tx, this.#locksIfAny, reservationId, lines)
  }

  /**
   * The reservations hold nothing any more: their units go back to stock (before `finish`), or,
   * consumed by an order, are sold (no stock row changes: it may come after).
   */
  async freeHeld (reservationIds: readonly string[], options: { giveBack: boolean }): Promise<void> {
    if (options.giveBack) this.#open()
    for (const id of await freeHeld(this.tx, this.#locksIfAny, reservationIds, options)) this.#moved.add(id)
  }

  /** A cancelled order's units go back to stock. */
  async giveBackOrder (orderId: string): Promise<void> {
    this.#open()
    for (const id of await giveBackOrder(this.tx, this.#locksIfAny, orderId)) this.#moved.add(id)
  }

  /** An import's stock phase: the file's quantities for the products it wrote, whose documents follow. */
  async importStock (stock: readonly ImportedStock[]): Promise<void> {
    await setImportedStock(this.tx, this.locks, stock)
    for (const s of stock) this.#rewrite.add(s.productId.toLowerCase())
  }

  /** After an import: the active holds on what it wrote are taken from the file's stock again. */
  async reapplyHolds (productIds: readonly string[]): Promise<void> {
    for (const id of await reapplyHolds(this.tx, this.locks, productIds)) this.#moved.add(id)
  }

  /** Renders these (locked) products' documents again at the end. */
  rewrite (productIds: Iterable<string>): void {
    for (const id of productIds) this.#rewrite.add(id)
  }

  /** Every product whose stock or document this write changed. */
  get changed (): string[] {
    return [...new Set([...this.#moved, ...this.#rewrite])]
  }

  /**
   * After the last change: refreshes what moved (its `product.updated` event written here) and
   * renders the rest that was written. Runs once; the write calls it at its end if the work
   * did not (an order does, so that its products' events come before its own).
   */
  async finish (): Promise<void> {
    if (this.#finished) return
    const locks = this.#locksIfAny
    this.#finished = true
    if (this.#moved.size === 0 && this.#rewrite.size === 0) return
    this.#send(writeDocuments(this.tx, locks, await refreshProducts(this.tx, locks, [...this.#moved], this.now)))
    await rewriteDocuments(this.tx, locks, [...this.#rewrite].filter((id) => !this.#moved.has(id)), this.now)
  }
}

/** A request's Idempotency-Key, and what a replay of it answers. */
export interface IdempotentRequest<R> {
  apiKeyId: string
  key: string
  /** The body's fingerprint (in its operation's own namespace: an order's key never replays a hold). */
  requestHash: string
  /** The response stored with the write. */
  response: (result: R) => { body: unknown, location: string, shapeVersion: number }
}

export type StockWritten<R> = { replayed: false, result: R } | { replayed: true, record: IdempotencyRecord }

export interface StockKeeperOptions {
  /** After a committed write changed these products; its failure is logged, never answered. */
  onChanged?: (productIds: string[]) => Promise<void>
  log?: { warn: (details: object, message: string) => void }
  idempotencyTtlHours?: number
  /** How long a request waits for another with the same Idempotency-Key before idempotency_key_in_use. */
  idempotencyWaitMs?: number
}

const CONTENTION = new Set(['40P01', '40001'])
const isContention = (err: unknown) => errorCodes(err).some((code) => CONTENTION.has(code))
const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Runs stock writes for one database (and, in a server, one instance's cache). */
export class StockKeeper {
  readonly #options: StockKeeperOptions

  constructor (readonly database: Database, options: StockKeeperOptions = {}) {
    this.#options = options
  }

  /**
   * Runs `work` in one transaction on a Shelf. Contention is retried a few times, then
   * answered 503 service_unavailable; nothing of a failed attempt remains. With a deadline,
   * a write that has not begun to commit by then rolls back (services/write-deadline.ts).
   */
  async run<R> (work: (shelf: Shelf) => Promise<R>, now = new Date(), deadline?: WriteDeadline): Promise<R> {
    const written = await this.runIdempotent(null, work, now, deadline)
    return (written as { result: R }).result
  }

  /**
   * `run`, after claiming the Idempotency-Key if one was sent: a key already used answers its
   * stored response (`replayed`), or idempotency_key_reused for another body.
   */
  async runIdempotent<R> (idempotency: IdempotentRequest<R> | null, work: (shelf: Shelf) => Promise<R>, now = new Date(), deadline?: WriteDeadline): Promise<StockWritten<R>> {
    // Without a deadline of its own (the CLI, the sweeps), one that never passes.
    const within = deadline ?? new WriteDeadline()
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await within.transaction(this.database.db, (tx) => this.#write(tx, idempotency, work, now))
        if (outcome.replayed) {
          if (outcome.record.requestHash !== idempotency!.requestHash) throw apiError('idempotency_key_reused')
          return outcome
        }
        await this.#tell(outcome.changed)
        return { replayed: false, result: outcome.result }
      } catch (err) {
        if (!isContention(err)) throw err
        // Refused, perhaps at its commit: nothing was written, and the retry keeps the deadline.
        within.rolledBack()
        if (attempt >= STOCK_RETRY.attempts) {
          this.#options.log?.warn({ err }, 'stock write kept meeting contention')
          throw apiError('service_unavailable', 'The stock is busy with other writes; retry shortly', { headers: { 'retry-after': '1' } })
        }
        // Jittered, so the transactions that met do not meet again.
        await pause(STOCK_RETRY.baseDelayMs * attempt * (0.5 + Math.random()))
      }
    }
  }

  // One attempt inside its transaction: the key claimed (or its first outcome read), the work, its response stored.
  async #write<R> (tx: Tx, idempotency: IdempotentRequest<R> | null, work: (shelf: Shelf) => Promise<R>, now: Date) {
    if (idempotency !== null && !await this.#claim(tx, idempotency)) {
      // Claimed earlier (and committed, perhaps while this one waited): that request's outcome.
      return { replayed: true as const, record: (await findIdempotencyRecord(tx, idempotency.apiKeyId, idempotency.key))! }
    }
    const shelf = new Shelf(tx, now)
    let result: R
    try {
      result = await work(shelf)
      await shelf.finish()
    } finally {
      // A statement sent earlier that failed explains a later one's failure (the transaction was aborted).
      await shelf.settle()
    }
    if (idempotency !== null) await storeIdempotentResponse(tx, idempotency.apiKeyId, idempotency.key, idempotency.response(result))
    return { replayed: false as const, result, changed: shelf.changed }
  }

  async #claim (tx: Tx, request: Pick<IdempotentRequest<unknown>, 'apiKeyId' | 'key' | 'requestHash'>): Promise<boolean> {
    try {
      return await claimIdempotencyKey(tx, {
        apiKeyId: request.apiKeyId,
        key: request.key,
        requestHash: request.requestHash,
        ttlHours: this.#options.idempotencyTtlHours ?? 24,
        waitMs: this.#options.idempotencyWaitMs ?? 5000
      })
    } catch (err) {
      // Its wait for the first request with this key ran out: that one is still running.
      if (errorCodes(err).includes('55P03')) throw apiError('idempotency_key_in_use', undefined, { headers: { 'retry-after': '1' } })
      throw err
    }
  }

  // The write has committed: a failure to tell the cache must not turn it into an error
  // (the client would retry an order that exists). The feed publishes the products' events,
  // which every instance's cache follows, so it catches up within its poll.
  async #tell (changed: string[]): Promise<void> {
    if (changed.length === 0 || this.#options.onChanged === undefined) return
    try {
      await this.#options.onChanged(changed)
    } catch (err) {
      this.#options.log?.warn({ err, products: changed.length }, 'committed a stock write but could not tell the catalogue cache')
    }
  }
}
