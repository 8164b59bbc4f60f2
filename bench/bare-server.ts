// Child process of bench/run.ts: the ceilings. A bare Fastify server that answers the same
// product, product page and orders page JSON as the app, from memory: no key, no database,
// no schemas. With a database URL, also the database ceilings: the app's product and page
// JSON kept in PostgreSQL (bench/rendered.ts), read by id or page number through a
// postgres.js pool of 10 and sent as it is (a string with a JSON content type is not
// serialised again).
import Fastify from 'fastify'
import postgres from 'postgres'
import type { BareServerData, FromBareServer } from './processes.ts'
import { RENDERED_PAGES, RENDERED_PRODUCTS } from './rendered.ts'

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

const sql = data.databaseUrl ? postgres(data.databaseUrl, { max: 10, onnotice: () => {} }) : undefined
if (sql) {
  app.get<{ Params: { id: string } }>('/db/products/:id', async (request, reply) => {
    const [row] = await sql<Array<{ body: string }>>`select body from ${sql(RENDERED_PRODUCTS)} where id = ${request.params.id}::uuid`
    return row ? reply.type('application/json').send(row.body) : reply.code(404).send({ error: 'product_not_found' })
  })
  app.get<{ Querystring: { page?: string } }>('/db/products', async (request, reply) => {
    const [row] = await sql<Array<{ body: string }>>`select body from ${sql(RENDERED_PAGES)} where page = ${Number(request.query.page ?? 1)}`
    return row ? reply.type('application/json').send(row.body) : reply.code(404).send({ error: 'page_not_found' })
  })
}

await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
process.send!({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0 } satisfies FromBareServer)
process.on('message', (message: { type?: string }) => {
  if (message.type === 'stop') app.close().then(() => sql?.end({ timeout: 5 })).finally(() => process.exit(0)).catch(() => {})
})
