// Readers that follow cursors one request at a time over one kept-alive connection, as an
// integrator's sync job does: a crawl of the product list by `nextCursor`, and a reader of
// the changes feed from its start. Each is a fixed piece of work (the whole list, the whole
// feed), timed from the first request to the last answer, JSON parsing included.
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { percentile } from './orders.ts'
import type { LoadResult } from './load.ts'

/** Pages at each end of a crawl whose latencies are compared (the last page no slower than the first). */
export const CRAWL_ENDS = 50
/** Consecutive failed answers after which a reader gives up. */
const MAX_FAILURES = 5

interface Answer { status: number, text: string, ms: number }

/** GETs over a single kept-alive socket (one request at a time). */
export function oneConnection (baseUrl: string, headers: Record<string, string>) {
  const url = new URL(baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const get = (path: string) => new Promise<Answer>((resolve, reject) => {
    const started = performance.now()
    const req = request({ host: url.hostname, port: url.port, path, agent, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
  return { get, close: () => agent.destroy() }
}

/** A sequential reader's figures: LoadResult (per request) plus its own. */
export type SequentialResult = LoadResult & { extra: Record<string, number> }

/**
 * Follows `next` from `first` until it answers null; failed answers are retried (counted in
 * non2xx) up to MAX_FAILURES in a row. `onPage` reads each page and says where to go next.
 */
async function follow (input: { baseUrl: string, headers: Record<string, string>, first: string, onPage: (body: unknown) => string | null }) {
  const connection = oneConnection(input.baseUrl, input.headers)
  const latencies: number[] = []
  let non2xx = 0
  let errors = 0
  let failures = 0
  let path: string | null = input.first
  const started = performance.now()
  try {
    while (path !== null) {
      let answer: Answer
      try {
        answer = await connection.get(path)
      } catch {
        errors++
        if (++failures >= MAX_FAILURES) throw new Error(`${path}: ${MAX_FAILURES} connection errors in a row`)
        await sleep(100)
        continue
      }
      if (answer.status !== 200) {
        non2xx++
        if (++failures >= MAX_FAILURES) throw new Error(`${path} answered ${answer.status} ${MAX_FAILURES} times in a row: ${answer.text.slice(0, 200)}`)
        await sleep(100)
        continue
      }
      failures = 0
      latencies.push(answer.ms)
      path = input.onPage(JSON.parse(answer.text))
    }
  } finally {
    connection.close()
  }
  return { latencies, non2xx, errors, seconds: (performance.now() - started) / 1000 }
}

function summary (latencies: number[], seconds: number, non2xx: number, errors: number): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b)
  return {
    requestsPerSecond: (latencies.length + non2xx) / seconds,
    okPerSecond: latencies.length / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    total: latencies.length + non2xx,
    non2xx,
    errors
  }
}

const medianOf = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50)
const meanOf = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length)

/**
 * Crawls the whole product list by cursor: `GET /external/v1/products`, then each page's
 * nextCursor until it is null. Checks that every product came exactly once (`expected`
 * products). extra: seconds, pages, items, missing, duplicates, and the latencies of the
 * first and last CRAWL_ENDS pages (median and mean) with their ratio.
 */
export async function crawlByCursor (input: { baseUrl: string, headers: Record<string, string>, expected: number }): Promise<SequentialResult> {
  const seen = new Set<string>()
  let items = 0
  let duplicates = 0
  const run = await follow({
    ...input,
    first: '/external/v1/products',
    onPage: (body) => {
      const page = body as { items: Array<{ id: string }>, nextCursor: string | null }
      for (const item of page.items) {
        items++
        if (seen.has(item.id)) duplicates++
        seen.add(item.id)
      }
      return page.nextCursor === null ? null : `/external/v1/products?cursor=${encodeURIComponent(page.nextCursor)}`
    }
  })
  const { latencies } = run
  const ends = Math.min(CRAWL_ENDS, Math.floor(latencies.length / 2))
  const first = latencies.slice(0, ends)
  const last = latencies.slice(latencies.length - ends)
  const firstMedian = medianOf(first)
  const lastMedian = medianOf(last)
  return {
    ...summary(latencies, run.seconds, run.non2xx, run.errors),
    extra: {
      seconds: run.seconds,
      pages: latencies.length,
      items,
      missing: input.expected - seen.size,
      duplicates,
      firstMedianMs: firstMedian,
      lastMedianMs: lastMedian,
      firstMeanMs: meanOf(first),
      lastMeanMs: meanOf(last),
      lastToFirst: lastMedian / firstMedian
    }
  }
}

/**
 * Reads the changes feed from its start, `limit` events a request, following nextCursor
 * while hasMore. Checks that positions only grow and that the first `seededCount` positions
 * brought the `seededVisible` events the key may see. extra: seconds, pages, events,
 * eventsPerSecond, seededMissing (seeded events not read: should be 0), outOfOrder.
 */
export async function readFeedFromStart (input: { baseUrl: string, headers: Record<string, string>, limit: number, seededCount: number, seededVisible: number }): Promise<SequentialResult> {
  let events = 0
  let seeded = 0
  let outOfOrder = 0
  let last = 0
  const run = await follow({
    ...input,
    first: `/external/v1/changes?limit=${input.limit}`,
    onPage: (body) => {
      const page = body as { items: Array<{ id: string }>, nextCursor: string, hasMore: boolean }
      for (const item of page.items) {
        const position = Number(item.id.slice('evt_'.length))
        if (!(position > last)) outOfOrder++
        last = position
        events++
        if (position <= input.seededCount) seeded++
      }
      return page.hasMore ? `/external/v1/changes?after=${encodeURIComponent(page.nextCursor)}&limit=${input.limit}` : null
    }
  })
  return {
    ...summary(run.latencies, run.seconds, run.non2xx, run.errors),
    extra: {
      seconds: run.seconds,
      pages: run.latencies.length,
      events,
      eventsPerSecond: events / run.seconds,
      seededMissing: input.seededVisible - seeded,
      outOfOrder
    }
  }
}
