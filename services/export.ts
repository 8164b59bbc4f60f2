// Exports: the whole catalogue (or a key's orders) in one streamed answer, as NDJSON lines
// that are exactly what GET product (GET order) answers, read from one snapshot and joined
// to the changes feed by the position that snapshot holds (db/export.ts says why nothing is
// missed), then one closing line with the count and that position as a feed cursor.
//
// Where it runs: on the primary, in one READ ONLY REPEATABLE READ transaction with a cursor.
// A replica could give a consistent snapshot too (its feed position is as exact), but a long
// read on a streaming replica is cancelled when replay needs the rows it holds back
// (max_standby_streaming_delay), or, with hot_standby_feedback, holds back vacuum on the
// primary all the same; and a key's concurrent exports are counted by advisory locks, which
// only the primary shares between instances. The cursor is not WITH HOLD, so it works
// through a transaction pooler, which keeps the transaction on one server connection.
//
// On PostgreSQL the rows are fetched as the client reads: the transaction waits while the
// client is slow, holding one connection and a snapshot, never the whole export. PGlite is
// one connection that every request shares: a transaction held open at a client's pace
// would stop the service, so there the export is read at the database's pace into a
// temporary file and sent from it.
import type { Readable } from 'node:stream'
import type { Database, Tx } from '../db/client.ts'
import { declareOrderRows, declareProductRows, fetchRawRows, fetchRows, startExport, type ExportRow } from '../db/export.ts'
import { readOrdersForKey, type OrderFilters } from '../db/orders.ts'
import { renderDocuments, type ProductFilters } from '../db/products.ts'
import { apiError } from '../errors.ts'
import { eventIdOf } from '../lib/event-id.ts'
import { FileSpool, Outlet, SinkClosedError, type TextSink } from '../lib/outlet.ts'
import type { Order } from '../schemas/orders.ts'

/** A key's exports at once (fleet-wide on PostgreSQL); a third is refused with 429. */
export const EXPORTS_PER_KEY = 2
/** What the 429 of a third export suggests waiting, in seconds. */
export const EXPORT_RETRY_AFTER_SECONDS = 10
/** Rows a FETCH reads: a few hundred kilobytes of documents. */
export const BATCH_ROWS = 500
/**
 * FETCHes kept in flight. With one, the database idled after each batch until the app, having
 * read its last row, asked for the next; with two, the next request is already waiting.
 */
const FETCHES_IN_FLIGHT = 2
/** Lines are sent in pieces of about this many bytes (what the stream buffers ahead). */
const CHUNK_BYTES = 64 * 1024
const NEWLINE = Buffer.from('\n')

export interface ExportSettings {
  /** Longest the start (the snapshot and the first rows) may take before 503 service_unavailable. */
  openTimeoutMs: number
  /** Exports reading the database at once on this instance (each holds a connection while it does); more answer 503. */
  concurrency: number
}

/** What the 503 of an instance already running its most exports suggests waiting, in seconds. */
export const EXPORT_BUSY_RETRY_AFTER_SECONDS = 5

export interface StartedExport {
  /** The feed cursor the export is joined to (also the closing line's changesCursor). */
  changesCursor: string
  /** The NDJSON lines, the closing one last; destroyed without it when the export fails midway. */
  body: Readable
}

/** The closing line of an export. */
export function exportEndLine (count: number, changesCursor: string): string {
  return `${JSON.stringify({ exportEnd: { count, changesCursor } })}\n`
}

interface RowSource {
  /** Declares the transaction's cursor over the rows (ExportRow), in the list's order, as GET answers them at `now`. */
  declare: (tx: Tx, now: Date) => Promise<void>
  /** The lines of the records the rows name by id (`renderId`), as GET answers them at `now`, by id. */
  render: (tx: Tx, ids: string[], now: Date) => Promise<Map<string, string>>
}

/**
 * Lines gathered into one piece to send. Text is appended as text; bytes (documents passed on
 * as PostgreSQL sent them) are kept as they are and joined once, when the piece is taken.
 */
class Piece {
  #parts: Buffer[] = []
  #text = ''
  size = 0

  add (line: string | Buffer): void {
    if (typeof line === 'string') {
      this.#text += `${line}\n`
    } else {
      this.#flushText()
      this.#parts.push(line, NEWLINE)
    }
    this.size += line.length + 1
  }

  /** What was gathered, then `last` (text), and a new piece begins. */
  take (last = ''): string | Buffer {
    this.#text += last
    let piece: string | Buffer = this.#text
    if (this.#parts.length > 0) {
      this.#flushText()
      piece = Buffer.concat(this.#parts)
    }
    this.#parts = []
    this.#text = ''
    this.size = 0
    return piece
  }

  #flushText (): void {
    if (this.#text === '') return
    this.#parts.push(Buffer.from(this.#text))
    this.#text = ''
  }
}

/** `fn`, called at most once. */
function once (fn: () => void): () => void {
  let called = false
  return () => {
    if (called) return
    called = true
    fn()
  }
}

function tooManyExports () {
  return apiError('rate_limit_exceeded', `At most ${EXPORTS_PER_KEY} exports at once per API key; retry when one has finished`, {
    headers: { 'retry-after': String(EXPORT_RETRY_AFTER_SECONDS) }
  })
}

export class Exporter {
  readonly #database: Database
  readonly #settings: ExportSettings
  /** Exports running per key on this instance: PGlite's slots (one process holds the database). */
  readonly #running = new Map<string, number>()
  /** Exports reading the database on this instance. */
  #reading = 0

  constructor (database: Database, settings: ExportSettings) {
    this.#database = database
    this.#settings = settings
  }

  /**
   * The products `filters` select, each line a stored document (rendered again when its price
   * has changed since).
   */
  products (apiKeyId: string, filters: ProductFilters): Promise<StartedExport> {
    return this.#start(apiKeyId, {
      declare: (tx, now) => declareProductRows(tx, filters, now),
      render: async (tx, ids, now) => new Map((await renderDocuments(tx, ids, now)).map((d) => [d.id, d.body]))
    })
  }

  /**
   * The key's orders `filters` select, each line GET order's body with its items: built by the
   * statement, or, for an order it cannot promise the bytes of, by `serialize` (GET order's own
   * serializer).
   */
  orders (apiKeyId: string, filters: OrderFilters, serialize: (order: Order) => string): Promise<StartedExport> {
    return this.#start(apiKeyId, {
      declare: (tx) => declareOrderRows(tx, apiKeyId, filters),
      render: async (tx, ids) => new Map((await readOrdersForKey(tx, apiKeyId, ids)).map((order) => [order.id, serialize(order)]))
    })
  }

  async #start (apiKeyId: string, source: RowSource): Promise<StartedExport> {
    if (this.#database.kind === 'pglite') return this.#spooled(apiKeyId, source)
    const outlet = new Outlet()
    let opened = false
    return new Promise<StartedExport>((resolve, reject) => {
      const deadline = setTimeout(() => {
        reject(apiError('service_unavailable', 'The service could not answer in time; retry shortly'))
        // The producer stops at its next send and rolls back.
        outlet.destroy()
      }, this.#settings.openTimeoutMs)
      this.#produce(apiKeyId, source, outlet, (changesCursor) => {
        clearTimeout(deadline)
        opened = true
        resolve({ changesCursor, body: outlet })
      }).then(async (produced) => {
        await outlet.send(produced.tail)
        outlet.finish()
      }).catch((err: unknown) => {
        clearTimeout(deadline)
        if (!opened) reject(err)
        // After the first byte a failure cuts the answer short (no closing line); a reader
        // that left needs no error.
        else if (!(err instanceof SinkClosedError)) outlet.destroy(err as Error)
      })
    })
  }

  async #spooled (apiKeyId: string, source: RowSource): Promise<StartedExport> {
    const running = this.#running.get(apiKeyId) ?? 0
    if (running >= EXPORTS_PER_KEY) throw tooManyExports()
    this.#running.set(apiKeyId, running + 1)
    const release = () => {
      const left = (this.#running.get(apiKeyId) ?? 1) - 1
      if (left > 0) this.#running.set(apiKeyId, left)
      else this.#running.delete(apiKeyId)
    }
    let spool: FileSpool | undefined
    try {
      spool = await FileSpool.create()
      const { changesCursor, tail } = await this.#produce(apiKeyId, source, spool, () => {})
      await spool.send(tail)
      const body = spool.readBack()
      // Free once everything is read (or the reader gone): before the client has the last line.
      const released = once(release)
      body.once('end', released).once('close', released)
      return { changesCursor, body }
    } catch (err) {
      await spool?.discard()
      release()
      throw err
    }
  }

  /** #read, within the instance's concurrency: an export holds a database connection until its snapshot is read. */
  async #produce (apiKeyId: string, source: RowSource, sink: TextSink, opened: (changesCursor: string) => void): Promise<{ changesCursor: string, tail: string | Buffer }> {
    if (this.#reading >= this.#settings.concurrency) {
      throw apiError('service_unavailable', 'This instance is running its most exports at once; retry shortly', {
        headers: { 'retry-after': String(EXPORT_BUSY_RETRY_AFTER_SECONDS) }
      })
    }
    this.#reading++
    try {
      return await this.#read(apiKeyId, source, sink, opened)
    } finally {
      this.#reading--
    }
  }

  /**
   * Reads the snapshot into `sink`: the rows' lines, but the last ones, which it resolves with
   * (`tail`, the closing line with them) for the caller to send once the transaction has ended
   * and its slot is free, so that a client that has the closing line may export again at once.
   * `opened` is called once the first rows are read (what comes before is the part that may
   * still answer an error).
   */
  async #read (apiKeyId: string, source: RowSource, sink: TextSink, opened: (changesCursor: string) => void): Promise<{ changesCursor: string, tail: string | Buffer }> {
    return this.#database.snapshot(async (tx) => {
      const now = new Date()
      // The key's slots: advisory locks of this transaction, seen by every instance (on
      // PGlite, counted by #spooled: its transaction ends before the answer is sent).
      const start = await startExport(tx, { apiKeyId, slots: this.#database.kind === 'pglite' ? null : EXPORTS_PER_KEY })
      if (!start.slot) throw tooManyExports()
      const changesCursor = eventIdOf(start.position)
      await source.declare(tx, now)
      let count = 0
      const pending = new Piece()
      // On PostgreSQL each line is passed on as the bytes it was read in, never decoded into
      // text and encoded again.
      const fetch = this.#database.kind === 'pglite' ? fetchRows : fetchRawRows
      // Batches are asked for ahead of need: the connection answers them in turn, so the
      // database is already reading the next one when the app takes a batch, instead of
      // waiting for the app to ask. If sending fails, the transaction rolls back and the reads
      // still asked fail with it: nobody awaits them then.
      const ask = () => {
        const batch = fetch(tx, BATCH_ROWS)
        batch.catch(() => {})
        return batch
      }
      const asked = Array.from({ length: FETCHES_IN_FLIGHT }, ask)
      for (let first = true; ; first = false) {
        const rows = await asked.shift()!
        if (first) opened(changesCursor)
        const more = rows.length === BATCH_ROWS
        if (more) asked.push(ask())
        for (const line of await linesOf(tx, rows, source, now)) {
          pending.add(line)
          count++
          if (pending.size >= CHUNK_BYTES) await sink.send(pending.take())
        }
        if (!more) break
      }
      // Past the end those reads find no rows; the transaction ends after them.
      await Promise.all(asked)
      return { changesCursor, tail: pending.take(exportEndLine(count, changesCursor)) }
    })
  }
}

/** The rows' lines (without their newline): each as the statement gave it, or rendered now where a row asks for it. */
async function linesOf (tx: Tx, rows: ExportRow[], source: RowSource, now: Date): Promise<Array<string | Buffer>> {
  const ids = rows.flatMap((r) => r.renderId === null ? [] : [r.renderId])
  if (ids.length === 0) return rows.map((r) => r.body!)
  const rendered = await source.render(tx, ids, now)
  return rows.map((r) => r.renderId === null ? r.body! : rendered.get(r.renderId)!)
}
