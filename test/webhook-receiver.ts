// A real HTTP receiver for webhook tests: records every request and checks its signature
// with the `standardwebhooks` package (code the service did not write), and answers as the
// test says (a status, a delay, a redirect, a huge body).
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { UNLIMITED, type TestContext } from './helper.ts'

/**
 * Configuration of an app that delivers to these receivers (plain http on 127.0.0.1), with
 * the feed and the worker quick: each test adds its retry schedule and what else it needs.
 */
export const WEBHOOK_TEST_ENV = {
  ...UNLIMITED,
  READ_SETTLE_MS: '0',
  EVENT_PUBLISH_MS: '20',
  WEBHOOK_POLL_MS: '20',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1'
}

export interface Received {
  id: string
  timestamp: string
  signature: string
  headers: IncomingMessage['headers']
  body: string
  json: { type: string, timestamp: string, data: Record<string, unknown> & { id: string, resourceId: string } }
  at: number
}

export type Responder = (req: Received, res: ServerResponse) => void | Promise<void>

export interface Receiver {
  url: string
  port: number
  received: Received[]
  /** How this receiver answers from now on (200 by default). */
  respond: (responder: Responder) => void
  /** Whether `secret` (a whsec_ secret) verifies this request's signature. */
  verifies: (request: Received, secret: string) => boolean
  /** TCP connections accepted so far (a refused address opens none). */
  connections: () => number
  /** Closes every connection the receiver holds (as a receiver's idle timeout would). */
  dropConnections: () => void
  /** Requests with this webhook-id. */
  hits: (id: string) => Received[]
  /** Resolves once `count` requests (in all) have come, or rejects after `timeoutMs`. */
  waitFor: (count: number, timeoutMs?: number) => Promise<Received[]>
  close: () => Promise<void>
}

export async function startReceiver (t: TestContext, path = '/hook', options: { keepAliveMs?: number } = {}): Promise<Receiver> {
  const received: Received[] = []
  let responder: Responder = (_req, res) => { res.writeHead(200).end('ok') }
  const waiters: Array<() => void> = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let json: Received['json']
      try {
        json = JSON.parse(body) as Received['json']
      } catch {
        json = { type: '', timestamp: '', data: { id: '', resourceId: '' } }
      }
      const request: Received = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        headers: req.headers,
        body,
        json,
        at: Date.now()
      }
      received.push(request)
      for (const wake of waiters.splice(0)) wake()
      Promise.resolve(responder(request, res)).catch(() => res.destroy())
    })
  })
  let connections = 0
  server.on('connection', () => { connections++ })
  server.keepAliveTimeout = options.keepAliveMs ?? 100
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  const close = async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.teardown(close)
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    received,
    respond: (next) => { responder = next },
    verifies: (request, secret) => {
      try {
        new Webhook(secret).verify(request.body, { 'webhook-id': request.id, 'webhook-timestamp': request.timestamp, 'webhook-signature': request.signature })
        return true
      } catch {
        return false
      }
    },
    connections: () => connections,
    dropConnections: () => server.closeAllConnections(),
    hits: (id) => received.filter((r) => r.id === id),
    waitFor: async (count, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs
      while (received.length < count) {
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`the receiver got ${received.length} requests, expected ${count} within ${timeoutMs} ms`)
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), new Promise((resolve) => setTimeout(resolve, Math.min(left, 250)))])
      }
      return received
    },
    close
  }
}
