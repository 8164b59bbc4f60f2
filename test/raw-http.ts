// Bytes over a plain TCP socket, for what app.inject cannot send: requests Node's HTTP parser
// refuses (headers too large, malformed lines) never reach Fastify's router.
import net from 'node:net'

export interface RawAnswer {
  statusCode: number
  headers: Record<string, string>
  body: string
  /** Every response read off the socket, in order (a keep-alive connection may carry several). */
  all: Array<{ statusCode: number, headers: Record<string, string>, body: string }>
  /** Whether the server closed the connection (within `waitMs`). */
  closed: boolean
}

/** The responses, parsed: a status line, headers, and a body of Content-Length bytes each. */
function parseResponses (text: string): RawAnswer['all'] {
  const responses: RawAnswer['all'] = []
  let rest = text
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => {
      const colon = line.indexOf(':')
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
    }))
    const length = Number(headers['content-length'] ?? 0)
    const bodyBytes = Buffer.from(rest.slice(end + 4), 'latin1')
    if (bodyBytes.length < length) break
    responses.push({ statusCode: Number(statusLine.split(' ')[1]), headers, body: bodyBytes.subarray(0, length).toString('utf8') })
    rest = bodyBytes.subarray(length).toString('latin1')
  }
  return responses
}

/**
 * Sends `chunks` (written one after the other) to 127.0.0.1:`port` and reads `responses`
 * whole responses; after the last, until the server closes the connection when it said
 * `connection: close` (or `waitMs` passes). The last response read is the answer.
 */
export async function rawRequest (port: number, chunks: Array<string | Buffer>, { responses = 1, waitMs = 3000 } = {}): Promise<RawAnswer> {
  return await new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const received: Buffer[] = []
    let closed = false
    const finish = () => {
      clearTimeout(timer)
      socket.destroy()
      const all = parseResponses(Buffer.concat(received).toString('latin1'))
      const last = all.at(-1)
      if (last === undefined) reject(new Error(`no response (closed: ${String(closed)})`))
      else resolve({ ...last, all, closed })
    }
    const timer = setTimeout(finish, waitMs)
    socket.on('connect', () => {
      // A server that answers early may close before everything is written: that is its right.
      for (const chunk of chunks) if (!socket.destroyed) socket.write(chunk, () => {})
    })
    socket.on('data', (data) => {
      received.push(data)
      const all = parseResponses(Buffer.concat(received).toString('latin1'))
      // A kept-alive connection stays open: the answers are all that is awaited.
      if (all.length >= responses && all.at(-1)!.headers.connection !== 'close') finish()
    })
    socket.on('end', () => { closed = true; finish() })
    socket.on('error', () => { closed = true })
    socket.on('close', () => { closed = true; finish() })
  })
}
