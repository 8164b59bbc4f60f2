// What the export tests share: a catalogue of many plain products written by SQL in seconds,
// an export read over a real socket at the pace a test chooses, and its lines parsed.
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { StringDecoder } from 'node:string_decoder'
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client.ts'
import { renumberProducts } from '../db/products.ts'
import { resetCatalog } from '../db/settings.ts'
import { sleep } from './helper.ts'

export interface ExportEnd { exportEnd: { count: number, changesCursor: string } }

/** An export's body split into its record lines (parsed) and its closing line; `end` is undefined when the body was cut short. */
export function parseExport<R = Record<string, unknown>> (body: string): { records: R[], lines: string[], end: ExportEnd['exportEnd'] | undefined } {
  const lines = body.split('\n')
  if (lines.at(-1) !== '') throw new Error(`an export must end with a newline: ${JSON.stringify(body.slice(-200))}`)
  lines.pop()
  const last = lines.at(-1)
  const end = last === undefined ? undefined : (JSON.parse(last) as Partial<ExportEnd>).exportEnd
  const recordLines = end === undefined ? lines : lines.slice(0, -1)
  return { records: recordLines.map((l) => JSON.parse(l) as R), lines: recordLines, end }
}

/**
 * `count` plain products (no variants, categories or discounts; about 830 bytes a document)
 * named `<prefix> 000001`…, with their list positions, documents and (unless `searchable` is
 * false: the trigram index is the slow part) search rows, all written by SQL: a few seconds
 * for 100,000, where rendering each document would take a minute. A
 * document is the JSON the app renders for its row, byte for byte; its stored ETag is not
 * the app's (nothing here sends one).
 */
export async function seedPlainProducts (database: Database, count: number, options: { prefix?: string, searchable?: boolean } = {}): Promise<void> {
  const { prefix = 'Bulk', searchable = true } = options
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`set local statement_timeout = 0`)
    await tx.execute(sql`
      with made as (
        insert into products (id, name, sku, quantity, price, is_available, available, image_url, updated_at)
        select gen_random_uuid(), ${prefix} || ' ' || lpad(g::text, 6, '0') || ' ' || repeat('x', 200), ${prefix} || '-' || g, 1000,
          9.99 + (g % 100), true, true, 'https://img.example.com/' || repeat('p', 300) || '/' || g || '.jpg', date_trunc('milliseconds', now())
        from generate_series(1, ${count}::int) g
        returning *
      ), searched as (
        insert into product_search (product_id, sort_name, search_text)
        select id, lower(name), lower(name) || chr(10) || lower(sku) from made where ${searchable}
      )
      insert into product_documents (product_id, body, etag, price_changes_at)
      select id, body, '"' || md5(body) || '"', null from (
        select id, '{"id":"' || id || '","name":' || to_json(name)::text || ',"sku":' || to_json(sku)::text ||
          ',"barcode":null,"quantity":' || quantity || ',"price":' || trim_scale(price)::text || ',"sellPrice":' || trim_scale(price)::text ||
          ',"isAvailable":true,"productImageUrl":' || to_json(image_url)::text ||
          ',"categoryIds":[],"brandId":null,"variants":[],"combinations":[],"updatedAt":"' ||
          to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}' as body
        from made) documents`)
    await renumberProducts(tx)
  })
  // Instances drop what they cached of the catalogue, as after an import.
  await resetCatalog(database.db)
}

/**
 * An export read over a real socket, as fast as the test lets it: `take` reads on until so
 * many bytes have come, `finish` reads the rest (at a trickle when asked). It counts bytes and
 * lines and keeps the last line; the whole body only when asked to (`keep`).
 */
export class SocketExport {
  status = 0
  headers: IncomingHttpHeaders = {}
  received = 0
  lines = 0
  lastLine = ''
  body = ''
  /** 'complete' once the body ended normally, 'cut' when the connection closed before. */
  readonly outcome: Promise<'complete' | 'cut'>
  #partial = ''
  #waiting: (() => void) | null = null
  #target = 0
  #response: IncomingMessage | null = null
  readonly #decoder = new StringDecoder('utf8')
  #settled: 'complete' | 'cut' | null = null
  readonly #keep: boolean

  private constructor (keep: boolean, outcome: Promise<'complete' | 'cut'>) {
    this.#keep = keep
    this.outcome = outcome
  }

  /** Sends the request and waits for the answer's head; the body is not read until asked. */
  static async open (url: string, headers: Record<string, string>, options: { keep?: boolean } = {}): Promise<SocketExport> {
    let settle!: (outcome: 'complete' | 'cut') => void
    const outcome = new Promise<'complete' | 'cut'>((resolve) => { settle = resolve })
    const reader = new SocketExport(options.keep ?? false, outcome)
    await new Promise<void>((resolve, reject) => {
      const req = request(url, { headers, agent: false }, (res) => {
        reader.#response = res
        reader.status = res.statusCode ?? 0
        reader.headers = res.headers
        res.pause()
        res.on('data', (chunk: Buffer) => reader.#onData(chunk))
        res.on('end', () => reader.#settle('complete', settle))
        res.on('aborted', () => reader.#settle('cut', settle))
        res.on('error', () => reader.#settle('cut', settle))
        res.on('close', () => reader.#settle(res.complete ? 'complete' : 'cut', settle))
        resolve()
      })
      req.on('error', (err) => {
        if (reader.#response === null) reject(err)
        else reader.#settle('cut', settle)
      })
      req.end()
    })
    return reader
  }

  /** Reads until at least `bytes` more have come (or the body ended); then stops reading. */
  async take (bytes: number): Promise<void> {
    this.#target = this.received + bytes
    if (this.#settled !== null) return
    await new Promise<void>((resolve) => {
      this.#waiting = resolve
      this.#response!.resume()
    })
  }

  /** Reads to the end, at most `bytesPerSecond` when given; resolves with how it ended. */
  async finish (options: { bytesPerSecond?: number, piece?: number } = {}): Promise<'complete' | 'cut'> {
    const { bytesPerSecond, piece = 64 * 1024 } = options
    if (bytesPerSecond === undefined) {
      this.#target = Infinity
      this.#response?.resume()
      return this.outcome
    }
    const started = Date.now()
    const startedAt = this.received
    while (this.#settled === null) {
      await this.take(piece)
      const due = started + ((this.received - startedAt) / bytesPerSecond) * 1000
      if (due > Date.now()) await sleep(due - Date.now())
    }
    return this.outcome
  }

  /** Closes the connection from the client's side. */
  destroy (): void {
    this.#response?.destroy()
  }

  /** The closing line, parsed, when the body ended with one. */
  get end (): ExportEnd['exportEnd'] | undefined {
    if (this.lastLine === '') return undefined
    return (JSON.parse(this.lastLine) as Partial<ExportEnd>).exportEnd
  }

  #onData (chunk: Buffer): void {
    this.received += chunk.length
    const decoded = this.#decoder.write(chunk)
    const text = this.#partial + decoded
    if (this.#keep) this.body += decoded
    const cut = text.lastIndexOf('\n')
    if (cut >= 0) {
      const complete = text.slice(0, cut)
      this.lines += complete.split('\n').length
      this.lastLine = complete.slice(complete.lastIndexOf('\n') + 1)
      this.#partial = text.slice(cut + 1)
    } else {
      this.#partial = text
    }
    if (this.received >= this.#target) {
      this.#response!.pause()
      this.#wake()
    }
  }

  #settle (outcome: 'complete' | 'cut', settle: (outcome: 'complete' | 'cut') => void): void {
    if (this.#settled !== null) return
    this.#settled = outcome
    settle(outcome)
    this.#wake()
  }

  #wake (): void {
    const waiting = this.#waiting
    this.#waiting = null
    waiting?.()
  }
}
