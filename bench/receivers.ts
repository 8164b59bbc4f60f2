// Child process of bench/run.ts: the webhook receivers of order-create-webhooks, three plain
// node:http servers on three ports of 127.0.0.1 that answer 204 as soon as a delivery's body
// is in, and note when it came (the wall clock, to the microsecond, to compare with the
// database's timestamps) and its webhook-id. They live in a process of their own, not in the
// bench's: there autocannon's event loop would delay both the receipt times and the load, and
// the receivers' CPU would not be told apart from the load generator's.
import { createServer, type Server } from 'node:http'
import type { FromReceivers, ToReceivers } from './processes.ts'

const count = Number(process.argv[2] ?? '3')
/** Per receiver: event positions (from webhook-id evt_<n>) and receipt times (ms since the epoch), in arrival order. */
const received = Array.from({ length: count }, () => ({ positions: [] as number[], times: [] as number[], malformed: 0 }))
const now = () => performance.timeOrigin + performance.now()

const servers: Server[] = received.map((log) => createServer((req, res) => {
  req.on('data', () => {})
  req.on('end', () => {
    const at = now()
    const id = req.headers['webhook-id']
    const match = typeof id === 'string' ? /^evt_(\d+)$/.exec(id) : null
    if (match) {
      log.positions.push(Number(match[1]))
      log.times.push(at)
    } else {
      log.malformed++
    }
    res.writeHead(204).end()
  })
}))

const ports = await Promise.all(servers.map((server) => new Promise<number>((resolve) => {
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    resolve(typeof address === 'object' && address ? address.port : 0)
  })
})))
process.send!({ type: 'ready', ports } satisfies FromReceivers)

process.on('message', (message: ToReceivers) => {
  if (message.type === 'counts') {
    process.send!({ type: 'counts', counts: received.map((r) => r.positions.length) } satisfies FromReceivers)
  } else if (message.type === 'report') {
    process.send!({ type: 'report', received: received.map((r) => ({ positions: r.positions, times: r.times, malformed: r.malformed })) } satisfies FromReceivers)
  } else if (message.type === 'stop') {
    for (const server of servers) server.closeAllConnections()
    Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve)))).finally(() => process.exit(0)).catch(() => {})
  }
})
