// Delivery attempts: POST the signed body to the endpoint and tell whether a 2xx came within
// the timeout. Connections are kept alive and reused per origin (one undici Agent per
// worker), and every new socket goes through the URL policy in its own connect hook: the
// DNS answer it connects to, and the address it actually reached, are checked before the
// connection joins the pool, so a name that resolves elsewhere later gains nothing from a
// pooled connection. Redirects are not followed (a 3xx is a failure), and at most a few
// kilobytes of the answer are read (past that the connection is dropped, not reused).
import type { Socket } from 'node:net'
import { Agent, buildConnector } from 'undici'
import { RefusedAddressError, type WebhookUrlPolicy } from './url-policy.ts'

export interface AttemptInput {
  url: string
  headers: Record<string, string>
  body: string
}

export interface AttemptOptions {
  timeoutMs: number
  maxResponseBytes: number
  /** Aborted at shutdown: the attempt ends at once and does not count. */
  signal?: AbortSignal
}

export interface AttemptResult {
  ok: boolean
  /** The answer's status; null when none came (refused address, timeout, connection error). */
  status: number | null
  /** Why it failed, for the log. */
  error?: string
  /** Cut short by the signal before any outcome: not an attempt to count. */
  aborted?: boolean
}

export interface DeliveryClientOptions {
  policy: WebhookUrlPolicy
  /** How long a new connection may take to open (DNS, TCP, TLS): the attempt's own timeout. */
  connectTimeoutMs: number
  /** How long an idle connection is kept for the next delivery (a receiver's Keep-Alive hint shortens it). */
  keepAliveMs: number
}

const USER_AGENT = 'storefront-api-webhooks/1'

export class DeliveryClient {
  readonly #agent: Agent
  /** New sockets opened so far (connections the policy let through): what reuse saves. */
  connections = 0

  constructor (options: DeliveryClientOptions) {
    const { policy } = options
    const keepAlive = options.keepAliveMs > 0
    this.#agent = new Agent({
      ...(keepAlive ? { keepAliveTimeout: options.keepAliveMs, keepAliveMaxTimeout: options.keepAliveMs } : {}),
      // One request a connection at a time, so a slow answer never holds up another delivery;
      // 0 closes each connection after its answer.
      pipelining: keepAlive ? 1 : 0,
      connect: (opts, callback) => {
        const origin = new URL(`${opts.protocol}//${opts.host}`)
        // The policy's own lookup resolves and checks the name for this socket alone.
        const connect = buildConnector({ timeout: options.connectTimeoutMs, lookup: policy.lookupFor(origin) })
        connect(opts, (err, socket) => {
          if (err !== null) {
            callback(err, null)
            return
          }
          // IP literals are never looked up: the address connected to is checked here too.
          const refused = policy.refusedPeer(origin, (socket as Socket).remoteAddress)
          if (refused !== null) {
            socket.destroy()
            callback(new RefusedAddressError(refused), null)
            return
          }
          this.connections++
          callback(null, socket)
        })
      }
    })
  }

  async attempt (input: AttemptInput, options: AttemptOptions): Promise<AttemptResult> {
    const { signal } = options
    const shutDown = () => signal?.aborted === true
    if (shutDown()) return { ok: false, status: null, error: 'aborted', aborted: true }
    const url = new URL(input.url)
    const abort = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      abort.abort()
    }, options.timeoutMs)
    const onAbort = () => abort.abort()
    signal?.addEventListener('abort', onAbort)
    let answered: AttemptResult | null = null
    try {
      const res = await this.#agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { ...input.headers, 'user-agent': USER_AGENT },
        body: input.body,
        signal: abort.signal
      })
      // The status counts once it came in time, however slowly the body follows.
      answered = { ok: res.statusCode >= 200 && res.statusCode < 300, status: res.statusCode }
      let read = 0
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length
        // Enough of it: the rest is the receiver's business, the connection is dropped.
        if (read >= options.maxResponseBytes) {
          res.body.destroy()
          break
        }
      }
      return answered
    } catch (err) {
      if (answered !== null) return answered
      if (timedOut) return { ok: false, status: null, error: `no answer within ${options.timeoutMs} ms` }
      if (shutDown()) return { ok: false, status: null, error: 'aborted', aborted: true }
      return { ok: false, status: null, error: (err as Error).message }
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
  }

  /** Closes every pooled connection (the worker's stop, after its last attempt). */
  async close (): Promise<void> {
    await this.#agent.destroy()
  }
}
