// The real process: first start on the embedded database, and a graceful SIGTERM.
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { printedKey, startServer } from '../server-process.ts'
import { until } from '../helper.ts'

const root = new URL('../..', import.meta.url).pathname

t.test('npm start on a fresh checkout: demo catalogue, a printed key, then SIGTERM finishes the request in flight and exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sf-serve-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  // Logged at info: the test waits on the server's own account of the request and the stop.
  const server = await startServer(root, { DATA_DIR: dataDir, LOG_LEVEL: 'info' })
  t.teardown(() => { server.child.kill('SIGKILL') })

  const key = printedKey(server.output())
  t.ok(key, 'the first start prints a demo key')
  t.match(server.output(), /curl -H "X-Api-Key: sk_/, 'with a ready-to-paste curl line')
  const products = await fetch(`${server.base}/external/v1/products`, { headers: { 'x-api-key': key! } })
  t.equal(products.status, 200)
  const page = await products.json() as { total: number, items: Array<{ id: string, quantity: number | null, combinations: unknown[] }> }
  t.ok(page.total >= 20, 'the demo catalogue is loaded')
  const product = page.items.find((p) => p.combinations.length === 0 && (p.quantity === null || p.quantity > 0))!

  // A create-order request whose body arrives slowly is in flight when SIGTERM comes.
  const body = JSON.stringify({ customerName: 'Signal Test', customerPhone: '+14155550123', items: [{ productId: product.id }] })
  const socket = connect(Number(new URL(server.base).port), '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let response = ''
  socket.on('data', (chunk) => { response += String(chunk) })
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.write(`POST /external/v1/orders HTTP/1.1\r\nHost: localhost\r\nX-Api-Key: ${key}\r\nX-Request-Id: in-flight\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`)
  socket.write(body.slice(0, 10))
  await until('the server to have the request', () => server.output().includes('"requestId":"in-flight"') ? true : undefined)
  server.child.kill('SIGTERM')
  await until('the drain to begin', () => server.output().includes('closing: finishing requests in flight') ? true : undefined)
  socket.end(body.slice(10))
  await closed

  t.match(response, /^HTTP\/1\.1 201 /, 'the request in flight completes')
  t.equal(await server.exited, 0, 'the process exits 0')
})
