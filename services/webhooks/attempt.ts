// One delivery attempt: POST the signed body to the endpoint, over a fresh connection whose
// address passes the URL policy; a 2xx within the timeout is success. Redirects are not
// followed (a 3xx is a failure), and at most a few kilobytes of the answer are read.
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { Socket } from 'node:net'
import type { WebhookUrlPolicy } from './url-policy.ts'

export interface AttemptInput {
  url: string
  headers: Record<string, string>
  body: string
}

export interface AttemptOptions {
  policy: WebhookUrlPolicy
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

export function attemptDelivery (input: AttemptInput, options: AttemptOptions): Promise<AttemptResult> {
  const url = new URL(input.url)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise<AttemptResult>((resolve) => {
    let settled = false
    const finish = (result: AttemptResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      req.destroy()
      resolve(result)
    }
    const body = Buffer.from(input.body)
    const req = send(url, {
      method: 'POST',
      headers: { ...input.headers, 'content-length': String(body.length), 'user-agent': 'storefront-api-webhooks/1', connection: 'close' },
      // A connection of its own: its address is checked by this lookup, never reused.
      agent: false,
      lookup: options.policy.lookupFor(url)
    })
    // The status counts once it came in time, however slowly the body follows.
    let answered: AttemptResult | null = null
    const timer = setTimeout(() => finish(answered ?? { ok: false, status: null, error: `no answer within ${options.timeoutMs} ms` }), options.timeoutMs)
    const onAbort = () => finish({ ok: false, status: null, error: 'aborted', aborted: true })
    options.signal?.addEventListener('abort', onAbort)
    req.on('socket', (socket: Socket) => {
      socket.once('connect', () => {
        // IP literals are never looked up: the address connected to is checked here too.
        const refused = options.policy.refusedPeer(url, socket.remoteAddress)
        if (refused !== null) finish({ ok: false, status: null, error: refused })
      })
    })
    req.on('error', (err) => finish({ ok: false, status: null, error: err.message }))
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0
      const result = { ok: status >= 200 && status < 300, status }
      answered = result
      let read = 0
      res.on('data', (chunk: Buffer) => {
        read += chunk.length
        // Enough of it: the rest is the receiver's business, the connection is dropped.
        if (read >= options.maxResponseBytes) finish(result)
      })
      res.on('end', () => finish(result))
      res.on('error', () => finish(result))
      res.on('aborted', () => finish(result))
    })
    if (options.signal?.aborted === true) {
      onAbort()
      return
    }
    req.end(body)
  })
}
