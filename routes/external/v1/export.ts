// GET /products/export and GET /orders/export: the whole list (with its filters) in one
// streamed NDJSON answer read from one snapshot, ended by a line with the count and the feed
// cursor to follow next (services/export.ts).
import { pipeline, type Readable } from 'node:stream'
import { createGzip, constants as zlib } from 'node:zlib'
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { invalidField } from '../../../errors.ts'
import { whenIdle } from '../../../lib/idle-response.ts'
import { documentedResponse, ref, withHeaders, type ResponseExample, type ResponseHeader } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { ExportOrdersQuery, ExportProductsQuery, NDJSON, OrderExportLine, ProductExportLine } from '../../../schemas/export.ts'
import { Order } from '../../../schemas/orders.ts'
import { duration } from '../../../schemas/wording.ts'
import { productFilters } from '../../../services/catalog.ts'
import { EXPORTS_PER_KEY, Exporter, type StartedExport } from '../../../services/export.ts'
import { orderFilters } from '../../../services/orders.ts'
import { NO_DEADLINE_MS, v1Errors, v1Headers } from './shared.ts'

// The answer lasts as long as the client reads: no handler deadline. The start has its own
// deadline (services/export.ts) and a stalled client is cut off by the idle timeout below.

// GET order's serializer: a line is byte for byte its answer.
const ORDER = ref(Order) as unknown as Record<string, unknown>
// Every answer of an export, errors included: nothing to keep.
const exportHeaders = (status: number): ResponseHeader[] => [...v1Headers(status), 'Cache-Control']

/** The 200 of an export: its lines' schema and, as examples, its lines in order. */
function ndjsonResponse (description: string, line: ReturnType<typeof ref>, examples: Record<string, ResponseExample>) {
  const { content, ...documented } = documentedResponse(description, line, examples, [...exportHeaders(200), 'Changes-Cursor'])
  return { ...documented, content: { [NDJSON]: content['application/json'] } }
}

const describe = (idleSeconds: number, record: string, get: string) => `One JSON object a line (\`${NDJSON}\`), each exactly what ${get} answers,
in the list's order and with its filters, all read from one snapshot of the store (changes committed meanwhile are not in it); then one
last line \`{"exportEnd":{"count":N,"changesCursor":"…"}}\`. A body without that last line was cut short: export again.

Then follow \`GET /external/v1/changes?after=<changesCursor>\` (also in the \`Changes-Cursor\` header): it yields every change the export
does not show, none missed; one it already shows may come again, and applying it again is harmless. Send \`Accept-Encoding: gzip\` for a
compressed body. At most ${EXPORTS_PER_KEY} exports at once per API key (a third answers 429 with Retry-After); an export counts as one
request against the rate limit. A client that reads nothing for ${duration(idleSeconds * 1000)} is disconnected. No ETag.
${record}`

const PRODUCT_PARAMETERS = Object.keys(ExportProductsQuery.properties)
const ORDER_PARAMETERS = Object.keys(ExportOrdersQuery.properties)

const notAParameter = (names: readonly string[]) => `is not a parameter of the export, which takes its list's filters only (${names.join(', ')}) and sends every record`

/** The list's filters only: page, pageSize, cursor or anything unknown is refused by name. */
const onlyParameters = (names: readonly string[]) => async (request: FastifyRequest) => {
  const unknown = Object.keys(request.query as object).find((name) => !names.includes(name))
  if (unknown !== undefined) throw invalidField(`query.${unknown}`, notAParameter(names))
}

/** What an export can answer besides its lines, each carrying Cache-Control. */
function exportErrors (names: readonly string[]) {
  const message = notAParameter(names)
  return withHeaders(v1Errors(
    { code: 'validation_failed', message: `query.page: ${message}`, details: [{ path: 'query.page', message }] },
    { code: 'rate_limit_exceeded', message: `At most ${EXPORTS_PER_KEY} exports at once per API key; retry when one has finished` }
  ), exportHeaders)
}

const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  const exporter = new Exporter(app.database, { openTimeoutMs: config.HANDLER_TIMEOUT_MS, concurrency: config.EXPORT_CONCURRENCY })
  const idleMs = config.EXPORT_IDLE_SECONDS * 1000
  // On send, so a refusal by the admission hook (401, 403, 429) carries it too.
  app.addHook('onSend', async (_request, reply) => { reply.header('cache-control', 'no-store') })

  function send (request: FastifyRequest, reply: FastifyReply, started: StartedExport): FastifyReply {
    reply.type(NDJSON).header('changes-cursor', started.changesCursor)
    // HEAD: the answer's headers, without reading the export (Fastify would read it to its end).
    if (request.method === 'HEAD') {
      started.body.destroy()
      return reply.send()
    }
    const gzip = negotiate(request.headers['accept-encoding']?.toLowerCase() ?? '', ['gzip', 'identity']) === 'gzip'
    // Anything that stops the stream (the client gone, idle, a failure) reaches the export,
    // which stops reading and ends its transaction. The fastest level: the stream keeps the
    // database's pace, and its JSON still shrinks several times.
    const body: Readable = gzip ? pipeline(started.body, createGzip({ level: zlib.Z_BEST_SPEED }), () => {}) : started.body
    whenIdle(reply.raw, idleMs, () => {
      request.log.info({ idleSeconds: config.EXPORT_IDLE_SECONDS }, 'export: the client read nothing for the idle timeout, disconnected')
      reply.raw.destroy()
    })
    if (gzip) reply.header('content-encoding', 'gzip')
    return reply.send(body)
  }

  app.get('/products/export', {
    config: { scope: 'products:list' },
    handlerTimeout: NO_DEADLINE_MS,
    schema: {
      operationId: 'exportProducts',
      summary: 'Export the catalogue',
      description: describe(config.EXPORT_IDLE_SECONDS, 'Takes the filters of list products; no page, pageSize or cursor.', 'GET /external/v1/products/{id}'),
      tags: ['Products'],
      querystring: ExportProductsQuery,
      response: {
        200: ndjsonResponse('The products, one a line, then the closing line', ref(ProductExportLine), RESPONSE_EXAMPLES.exportProducts),
        ...exportErrors(PRODUCT_PARAMETERS)
      }
    },
    preValidation: onlyParameters(PRODUCT_PARAMETERS)
  }, async (request, reply) => {
    return send(request, reply, await exporter.products(request.apiKey.id, productFilters(request.query)))
  })

  app.get('/orders/export', {
    config: { scope: 'orders:list' },
    handlerTimeout: NO_DEADLINE_MS,
    schema: {
      operationId: 'exportOrders',
      summary: 'Export your orders',
      description: describe(config.EXPORT_IDLE_SECONDS, 'Only orders created with the calling API key (a test key\'s are its test orders), newest first, with their items. Takes the filters of list orders; no page, pageSize or cursor.', 'GET /external/v1/orders/{orderNumberOrId}'),
      tags: ['Orders'],
      querystring: ExportOrdersQuery,
      response: {
        200: ndjsonResponse('Your orders with their items, one a line, newest first, then the closing line', ref(OrderExportLine), RESPONSE_EXAMPLES.exportOrders),
        ...exportErrors(ORDER_PARAMETERS)
      }
    },
    preValidation: onlyParameters(ORDER_PARAMETERS)
  }, async (request, reply) => {
    const serialize = reply.compileSerializationSchema(ORDER) as (order: Order) => string
    return send(request, reply, await exporter.orders(request.apiKey.id, orderFilters(request.query), serialize))
  })
}

export default exportRoutes
