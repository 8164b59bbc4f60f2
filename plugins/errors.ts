// The one place where failures become response bodies: { error, message, requestId, details? }.
import { STATUS_CODES as STATUS_TEXTS, maxHeaderSize, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { ErrorObject } from 'ajv'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, apiError, invalidField, type ErrorCode } from '../errors.ts'
import { isDatabaseUnavailable } from '../lib/database-failure.ts'
import { validationDetails } from '../lib/validation.ts'

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

// Fastify's own request errors, by code.
const FASTIFY_CODES: Record<string, [ErrorCode, string?]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_json'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['invalid_json', 'The request body is empty; send a JSON object'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['invalid_json', 'The request body does not match its Content-Length'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type'],
  FST_ERR_CTP_INVALID_TYPE: ['unsupported_media_type'],
  FST_ERR_HANDLER_TIMEOUT: ['service_unavailable', 'The service could not answer in time; retry shortly']
}

// Statuses Fastify or a plugin may set on an error of its own, and the code each answers.
const STATUS_CODES: Record<number, ErrorCode> = {
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded'
}

function toApiError (err: FastifyError | ApiError): ApiError | null {
  if (err instanceof ApiError) return err
  // Anything may be thrown; what is not an object has nothing to map.
  if (typeof err !== 'object' || err === null) return null
  if (err.validation) {
    const part = PART_NAMES[err.validationContext ?? ''] ?? err.validationContext ?? 'request'
    const details = validationDetails(err.validation as ErrorObject[], part)
    return apiError('validation_failed', `${details[0]!.path}: ${details[0]!.message}`, { details })
  }
  const known = FASTIFY_CODES[err.code]
  if (known) return apiError(...known)
  if (err instanceof SyntaxError && err.statusCode === 400) return apiError('invalid_json')
  if (isDatabaseUnavailable(err)) return apiError('service_unavailable', undefined, { headers: { 'retry-after': '5' } })
  const status = typeof err.statusCode === 'number' ? err.statusCode : 500
  const byStatus = STATUS_CODES[status]
  if (byStatus) return apiError(byStatus)
  if (status >= 400 && status < 500) return apiError('validation_failed', 'The request is malformed')
  return null
}

/**
 * A request answered before its body was read (a 413 is answered as soon as the Content-Length
 * or the bytes received pass BODY_LIMIT; a 401 before any body is read). Closing the
 * connection then would reset it under a client still sending, which loses the answer (EPIPE,
 * ECONNRESET) unless the client reads while it writes. So the rest is read and dropped, up to
 * this many times BODY_LIMIT, and the connection stays usable; a body declared larger is
 * answered and the connection closed at once, and one that turns out larger is cut when it
 * passes the bound.
 */
const DISCARD_LIMIT_FACTOR = 16

// Sockets whose refused request's body is being dropped: a late request timeout on one of them
// is no request of its own to answer.
const discarding = new WeakSet<Socket>()

function dropUnreadBody (request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw
  const socket = raw.socket as Socket | null
  if (raw.complete || socket == null || socket.destroyed) return
  const bound = DISCARD_LIMIT_FACTOR * request.server.config.BODY_LIMIT
  if (Number(request.headers['content-length']) > bound) {
    reply.header('connection', 'close')
    return
  }
  discarding.add(socket)
  let dropped = 0
  raw.on('data', (chunk: Buffer) => {
    dropped += chunk.length
    if (dropped > bound) socket.destroy()
  })
  raw.once('end', () => { discarding.delete(socket) })
  raw.resume()
}

export function sendError (request: FastifyRequest, reply: FastifyReply, err: ApiError) {
  // Also set here for errors raised before the onRequest hooks ran (see frameworkErrors).
  reply.header('request-id', request.id)
  dropUnreadBody(request, reply)
  if (err.headers) reply.headers(err.headers)
  const body: Record<string, unknown> = { error: err.code, message: err.message, requestId: request.id }
  if (err.details) body.details = err.details
  return reply.code(err.statusCode).type('application/json; charset=utf-8').send(body)
}

/**
 * Fastify's `frameworkErrors` option: errors the router raises before any hook or error
 * handler (a URL that is not valid percent-encoding, a path segment over maxParamLength).
 * Without it Fastify answers them with its own body, echoing the path, and no Request-Id.
 */
export function frameworkErrors (err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const problem = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a segment is too long' : 'is not valid percent-encoding'
  return sendError(request, reply, invalidField('path', problem))
}

/** What a request id is made from: its headers (the client's X-Request-Id, when safe to echo). */
export type RequestIdSource = (request: { headers: IncomingHttpHeaders }) => string

// The client's X-Request-Id, read from the bytes the parser refused (they hold what came so far).
const RAW_REQUEST_ID = /\r\nx-request-id:[ \t]*([^\r\n]*?)[ \t]*\r\n/i

/** The code of a request Node's HTTP parser refused, and the message that says why. */
function clientErrorOf (err: NodeJS.ErrnoException): ApiError {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return apiError('request_header_too_large', `The request headers are larger than the service accepts (${Math.round(maxHeaderSize / 1024)} KiB); the connection is closed`)
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return apiError('request_timeout')
  return apiError('malformed_request')
}

/**
 * Fastify's `clientErrorHandler` option: requests Node's HTTP parser refuses (headers too
 * large, a malformed request line or header, a request not received in time) never reach a
 * route, so they are answered here in the same error body, with a Request-Id made the way
 * every request's is, and the connection closed: the parser cannot find where the next
 * request would begin.
 */
export function clientErrorHandler (requestId: RequestIdSource) {
  // The parser may report again on a connection already being answered.
  const answering = new WeakSet<Socket>()
  return function answerClientError (this: FastifyInstance, err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Socket): void {
    // A reset connection has no one to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed || answering.has(socket)) return
    // The request was answered already; what is left of its body did not come in time.
    if (discarding.has(socket)) {
      socket.destroy()
      return
    }
    answering.add(socket)
    const raw = Buffer.isBuffer(err.rawPacket) ? RAW_REQUEST_ID.exec(err.rawPacket.toString('latin1')) : null
    const id = requestId({ headers: raw === null ? {} : { 'x-request-id': raw[1] } })
    const answer = clientErrorOf(err)
    this.log.info({ requestId: id, code: err.code, error: answer.code }, 'request refused by the HTTP parser')
    // A pipelined request ahead of this one is still being answered: its response goes first, whole.
    const inFlight = (socket as Socket & { _httpMessage?: (NodeJS.EventEmitter & { writableFinished?: boolean }) | null })._httpMessage
    if (inFlight != null && inFlight.writableFinished !== true) inFlight.once('finish', () => { sendClientError(socket, answer, id) })
    else sendClientError(socket, answer, id)
  }
}

function sendClientError (socket: Socket, answer: ApiError, id: string): void {
  if (socket.destroyed || !socket.writable || socket.writableEnded) {
    socket.destroy()
    return
  }
  const body = JSON.stringify({ error: answer.code, message: answer.message, requestId: id })
  socket.end([
    `HTTP/1.1 ${answer.statusCode} ${STATUS_TEXTS[answer.statusCode] ?? ''}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    `request-id: ${id}`,
    'x-content-type-options: nosniff',
    'connection: close',
    '',
    body
  ].join('\r\n'))
  // A client that never reads could hold the socket open; the answer is all it gets.
  socket.setTimeout(5000, () => socket.destroy())
}

/** Answers a request Node hands over whole, outside Fastify (CONNECT), in the error body. */
function answerOutsideFastify (app: FastifyInstance, requestId: RequestIdSource, req: IncomingMessage, socket: Socket, answer: ApiError): void {
  const id = requestId(req)
  app.log.info({ requestId: id, method: req.method, error: answer.code }, 'request refused outside the router')
  sendClientError(socket, answer, id)
}

export interface ErrorsOptions {
  /** How a request id is made, for requests answered before Fastify sees them. */
  requestId: RequestIdSource
}

export default fp<ErrorsOptions>(async function errorsPlugin (app, { requestId }) {
  // Node answers some requests itself, with an empty body and no Request-Id; each gets the
  // error body here instead. CONNECT (a proxy tunnel, which this service is not): 404 as any
  // method without a route. Expect other than 100-continue: HTTP lets a server ignore what it
  // does not know, so the request is served as if it had none. An HTTP/1.1 request without
  // Host: refused below, once Fastify has it (the server is made with requireHostHeader off).
  app.server.on('connect', (req: IncomingMessage, socket: Socket) => {
    answerOutsideFastify(app, requestId, req, socket, apiError('not_found', `No route for CONNECT ${String(req.url).slice(0, 200)}`))
  })
  app.server.on('checkExpectation', (req: IncomingMessage, res) => { app.server.emit('request', req, res) })
  app.addHook('onRequest', async (request) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      throw apiError('malformed_request', 'An HTTP/1.1 request needs a Host header')
    }
  })

  app.setErrorHandler((err: FastifyError, request, reply) => {
    // Fastify asks to close the connection after a body it refused for its size; the rest of
    // the body is read and dropped instead (dropUnreadBody), so it can stay open.
    // (Anything may be thrown, null included.)
    if ((err as FastifyError | null)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') reply.removeHeader('connection')
    const known = toApiError(err)
    if (known === null) {
      request.log.error({ err }, 'unexpected failure')
      return sendError(request, reply, apiError('internal_error'))
    }
    if (known.code === 'service_unavailable') request.log.warn({ err }, 'database unavailable')
    return sendError(request, reply, known)
  })

  app.setNotFoundHandler((request, reply) => {
    return sendError(request, reply, apiError('not_found', `No route for ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`))
  })
}, { name: 'errors' })
