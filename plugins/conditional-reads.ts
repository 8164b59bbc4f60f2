// Conditional reads: a route marked `conditional` answers with an ETag (a hash of the body
// it would send, or the tag stored beside a pre-rendered body, set by the handler), and with 304 and no body when the request's If-None-Match already holds
// it. The tag follows the body itself, so it changes whenever the body would, a discount
// starting or ending included. Authenticated reads may be kept only by the caller, and
// checked again before each use: `Cache-Control: private, no-cache`.
import fp from 'fastify-plugin'
import { entityTag } from '../lib/entity-tag.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** GET answers carry an ETag and honour If-None-Match. */
    conditional?: boolean
  }
}

export const READ_CACHE_CONTROL = 'private, no-cache'

/** Whether an If-None-Match header names the tag (`*`, a list, weak or strong forms). */
export function matchesTag (ifNoneMatch: string | undefined, tag: string): boolean {
  if (ifNoneMatch === undefined) return false
  return ifNoneMatch.split(',').some((candidate) => {
    const value = candidate.trim()
    return value === '*' || value === tag || value === `W/${tag}`
  })
}

export default fp(async function conditionalReadsPlugin (app) {
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.config.conditional !== true || reply.statusCode !== 200 || typeof payload !== 'string') return payload
    // A stored document comes with its tag: no hashing per request.
    const tag = (reply.getHeader('etag') as string | undefined) ?? entityTag(payload)
    reply.header('etag', tag).header('cache-control', READ_CACHE_CONTROL)
    if (!matchesTag(request.headers['if-none-match'], tag)) return payload
    // Fastify sends a 304 without a body; the other headers stay as they were.
    reply.code(304)
    return ''
  })
}, { name: 'conditional-reads' })
