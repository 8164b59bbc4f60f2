// The export scenarios' work: one client reads a whole export (GET …/products/export or
// …/orders/export) as fast as it can, counting its bytes and lines; and the floor it is
// compared with, a bare COPY of the same rows to a client (postgres.js) in the same run,
// the least the database must do to hand them over. Each is a fixed piece of work, timed from
// the request to the last byte; its rate (okPerSecond) is 1 ÷ those seconds, so the ratio of
// the two is the export's speed as a share of the floor's.
import { request } from 'node:http'
import postgres from 'postgres'
import type { LoadResult } from './load.ts'

export type ExportResult = LoadResult & { extra: Record<string, number> }

function result (seconds: number, ok: boolean, extra: Record<string, number>): ExportResult {
  const ms = seconds * 1000
  return {
    requestsPerSecond: 1 / seconds,
    okPerSecond: ok ? 1 / seconds : 0,
    p50: ms,
    p99: ms,
    total: 1,
    non2xx: ok ? 0 : 1,
    errors: 0,
    extra
  }
}

/**
 * Reads an export to its end over one connection without keeping it: bytes, lines, the time
 * to the first byte and to the last line, and whether the closing line says `expected`
 * records (extra.complete 1 or 0).
 */
export async function readWholeExport (input: { baseUrl: string, path: string, headers: Record<string, string>, expected: number }): Promise<ExportResult> {
  const url = new URL(input.path, input.baseUrl)
  const started = performance.now()
  return await new Promise<ExportResult>((resolve, reject) => {
    const req = request(url, { headers: input.headers, agent: false }, (res) => {
      let firstByteMs = 0
      let bytes = 0
      let lines = 0
      let tail = ''
      res.on('data', (chunk: Buffer) => {
        if (bytes === 0) firstByteMs = performance.now() - started
        bytes += chunk.length
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
        // The closing line is short: the end of the body holds it.
        tail = (tail + chunk.subarray(Math.max(0, chunk.length - 200)).toString('latin1')).slice(-400)
      })
      res.on('end', () => {
        const seconds = (performance.now() - started) / 1000
        const last = tail.trimEnd().split('\n').at(-1) ?? ''
        const count = /^\{"exportEnd":\{"count":(\d+),/.exec(last)?.[1]
        const complete = res.statusCode === 200 && count !== undefined && Number(count) === input.expected && lines === input.expected + 1
        resolve(result(seconds, complete, {
          seconds, bytes, lines, records: count === undefined ? -1 : Number(count), complete: complete ? 1 : 0, firstByteMs, mbPerSecond: bytes / 2 ** 20 / seconds
        }))
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** A bare `COPY (query) TO STDOUT` read to its end by a client: its bytes, rows and seconds. */
export async function copyToClient (url: string, query: string): Promise<ExportResult> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const started = performance.now()
    const stream = await sql.unsafe(`copy (${query}) to stdout`).readable()
    let bytes = 0
    let rows = 0
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.length
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++
    }
    const seconds = (performance.now() - started) / 1000
    return result(seconds, true, { seconds, bytes, lines: rows, mbPerSecond: bytes / 2 ** 20 / seconds })
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** The stored documents of every product, in the list's order: what the products export sends. */
export const PRODUCT_DOCUMENTS_COPY = 'select d.body from products p join product_documents d on d.product_id = p.id order by lower(p.name), p.id'

/**
 * A key's orders with their items as JSON made by the database, in the list's order: what
 * the orders export sends, rendered where the rows are (the fields as the export has them).
 */
export function orderDocumentsCopy (apiKeyId: string): string {
  if (!/^[0-9a-f-]{36}$/.test(apiKeyId)) throw new Error(`not a key id: ${apiKeyId}`)
  return `select json_build_object('id', o.id, 'orderNumber', o.order_number::text, 'mode', o.mode, 'status', o.status, 'total', o.total,
      'deliveryFee', o.delivery_fee, 'finalTotal', o.final_total, 'productsCount', o.products_count, 'date', o.created_at,
      'customerName', o.customer_name, 'customerPhone', o.customer_phone, 'note', o.note, 'address', o.address, 'updatedAt', o.updated_at,
      'items', coalesce((select json_agg(json_build_object('productId', i.product_id, 'combinationId', i.combination_id, 'name', i.name,
        'quantity', i.quantity, 'singlePrice', i.single_price, 'totalPrice', i.total_price) order by i.line) from order_items i where i.order_id = o.id), '[]'::json))
    from orders o where o.api_key_id = '${apiKeyId}' order by o.created_at desc, o.id desc`
}
