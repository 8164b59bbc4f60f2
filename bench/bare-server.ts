// Child process of bench/run.ts: the baseline. A bare Fastify server that answers the same
// product, product page and orders page JSON as the app, from memory: no key, no database, no schemas.
import Fastify from 'fastify'
import type { BareServerData, FromBareServer } from './processes.ts'

const data = await new Promise<BareServerData>((resolve) => {
  process.once('message', (message: BareServerData) => resolve(message))
  process.send!({ type: 'waiting' } satisfies FromBareServer)
})
const products = new Map(data.products.map((p) => [p.id, p]))

const app = Fastify({ logger: false })
app.get<{ Params: { id: string } }>('/products/:id', async (request, reply) => {
  const product = products.get(request.params.id)
  return product ?? reply.code(404).send({ error: 'product_not_found' })
})
app.get('/products', async () => data.page)
app.get('/orders', async (request, reply) => data.ordersPage ?? reply.code(404).send({ error: 'not_found' }))

await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
process.send!({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0 } satisfies FromBareServer)
process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop') app.close().finally(() => process.exit(0)).catch(() => {})
})
