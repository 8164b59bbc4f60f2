// One load run with autocannon: a fixed duration at a fixed number of connections, each
// request built by the scenario (so ids, pages and bodies can rotate).
import autocannon from 'autocannon'

export interface RequestSpec {
  method?: 'GET' | 'POST'
  path: string
  body?: string
  headers?: Record<string, string>
}

/** One step of a per-connection sequence: its request may use what earlier answers put in the connection's context. */
export interface SequenceStep {
  next: (context: Record<string, unknown>) => RequestSpec
  onResponse?: (status: number, body: string, context: Record<string, unknown>) => void
}

export interface LoadOptions {
  baseUrl: string
  next: () => RequestSpec
  /** Instead of `next`: each connection sends these requests in turn, again and again. */
  sequence?: SequenceStep[]
  headers?: Record<string, string>
  durationSeconds: number
  connections: number
}

export interface LoadResult {
  /** Answers a second, whatever their status. */
  requestsPerSecond: number
  /** 2xx answers (committed transactions for raw SQL) a second. */
  okPerSecond: number
  /** Latencies in milliseconds. */
  p50: number
  p99: number
  total: number
  /** Requests sent, answered or not (those in flight when the run stops are not in `total`). */
  sent?: number
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  /** A scenario's own figures (a crawl's seconds and pages, a feed reader's events a second…). */
  extra?: Record<string, number>
  /** Every latency, sorted (raw SQL drivers): slices of a run are pooled from them. */
  latencies?: number[]
}

export async function runLoad (options: LoadOptions): Promise<LoadResult> {
  let sent = 0
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    headers: options.headers,
    requests: options.sequence
      ? options.sequence.map((step) => ({
        setupRequest: (request: autocannon.Request, context: object) => {
          sent++
          const spec = step.next(context as Record<string, unknown>)
          return { ...request, ...spec, headers: { ...request.headers, ...spec.headers } }
        },
        ...(step.onResponse ? { onResponse: (status: number, body: string, context: object) => step.onResponse!(status, body, context as Record<string, unknown>) } : {})
      }))
      : [{
          setupRequest: (request) => {
            sent++
            const spec = options.next()
            return { ...request, ...spec, headers: { ...request.headers, ...spec.headers } }
          }
        }]
  })
  return {
    requestsPerSecond: result.requests.total / result.duration,
    okPerSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result.requests.total,
    sent,
    non2xx: result.non2xx,
    errors: result.errors
  }
}
