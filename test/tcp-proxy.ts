// A TCP proxy for outage tests: the app talks to PostgreSQL or Redis through it, and a test
// breaks the line at will, in one of the ways networks really break:
//   cut()          every connection dropped; new ones refused (ECONNREFUSED): the server is down.
//   cut('close')   every connection dropped; new ones accepted and closed cleanly at once
//                  (FIN): what a pooler, a cloud proxy or a load balancer does when the
//                  server behind it is gone.
//   stall()        connections stay open but no byte gets through, either way: a network
//                  that black-holes packets, which only timeouts can detect.
// It also lets a test see what clients send (sent()) and hold the server's answers once a
// client has sent a given text (holdRepliesAfter()), to see what a client asks before it has
// an answer.
import { once } from 'node:events'
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export type CutMode = 'refuse' | 'close'

export interface TcpProxy {
  /** The proxy's own port on 127.0.0.1 (kept across cut and restore). */
  port: number
  /** `url` with its host and port replaced by the proxy's. */
  urlFor: (url: string) => string
  /** Drops every open connection; new ones are refused (default) or closed at once, until restore(). */
  cut: (mode?: CutMode) => void
  /** Keeps connections open but forwards nothing, until restore(). */
  stall: () => void
  /** Everything clients have sent to the server so far, as latin1 text. */
  sent: () => string
  /** From when a client sends `marker` on, the server's bytes are kept back (in order) until releaseReplies(). */
  holdRepliesAfter: (marker: string) => void
  releaseReplies: () => void
  /** Forwards again; connections that lived through a stall are dropped (their bytes were lost). */
  restore: () => Promise<void>
  close: () => Promise<void>
}

type State = 'open' | 'stalled' | 'closing' | 'refusing'

export async function startTcpProxy (target: { host: string, port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  const stalled = new Set<Socket>()
  let state: State = 'open'
  let listening = false

  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => {
      sockets.delete(socket)
      stalled.delete(socket)
    })
    // Resets from either side are what the tests provoke; never an uncaught error.
    socket.on('error', () => {})
  }

  let sent = ''
  let holdMarker: string | null = null
  let holding = false
  const held: Array<{ to: Socket, chunk: Buffer }> = []
  const forward = (from: Socket, to: Socket, direction: 'up' | 'down') => {
    from.on('data', (chunk: Buffer) => {
      if (direction === 'up') {
        sent += chunk.toString('latin1')
        // Seen in this chunk or across its start (a text split between two chunks).
        if (holdMarker !== null && sent.includes(holdMarker, sent.length - chunk.length - holdMarker.length)) holding = true
      }
      if (state !== 'open' || to.destroyed) return
      if (direction === 'down' && holding) held.push({ to, chunk })
      else to.write(chunk)
    })
    from.once('close', () => to.destroy())
  }

  const server: Server = createServer((client) => {
    track(client)
    if (state === 'closing' || state === 'refusing') {
      // A clean FIN, reading (and dropping) whatever the client sends meanwhile, so the
      // kernel has no reason to answer with a reset instead.
      client.resume()
      client.end()
      return
    }
    if (state === 'stalled') {
      // Accepted, and then nothing: the client waits for an answer that never comes.
      stalled.add(client)
      return
    }
    const upstream = createConnection(target)
    track(upstream)
    forward(client, upstream, 'up')
    forward(upstream, client, 'down')
  })

  const listen = async (port: number) => {
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    listening = true
  }
  const stopListening = async () => {
    if (!listening) return
    listening = false
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  const dropAll = () => {
    for (const socket of sockets) socket.destroy()
  }

  await listen(0)
  const { port } = server.address() as { port: number }

  return {
    port,
    urlFor: (url) => {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      return parsed.href
    },
    cut: (mode = 'refuse') => {
      state = mode === 'refuse' ? 'refusing' : 'closing'
      // Not listening any more: the kernel refuses new connections on this port.
      if (mode === 'refuse') stopListening().catch(() => {})
      dropAll()
    },
    sent: () => sent,
    holdRepliesAfter: (marker) => {
      holdMarker = marker
    },
    releaseReplies: () => {
      holdMarker = null
      holding = false
      for (const { to, chunk } of held.splice(0)) if (!to.destroyed) to.write(chunk)
    },
    stall: () => {
      state = 'stalled'
      for (const socket of sockets) stalled.add(socket)
    },
    restore: async () => {
      state = 'open'
      for (const socket of stalled) socket.destroy()
      if (!listening) await listen(port)
    },
    close: async () => {
      state = 'refusing'
      dropAll()
      await stopListening()
    }
  }
}
