// Liveness and readiness for load balancers and orchestrators; no key needed.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { apiError } from '../errors.ts'
import { documentedResponse, errorResponses } from '../schemas/common.ts'

const Status = Type.Object({ status: Type.Literal('ok') })
const Readiness = Type.Object({
  status: Type.Literal('ready'),
  redis: Type.Unsafe<'ok' | 'unavailable' | 'not configured'>({ type: 'string', enum: ['ok', 'unavailable', 'not configured'], description: 'ok, unavailable (rate limits count per instance meanwhile) or not configured' })
})

const PING_DEADLINE_MS = 2000

function withDeadline<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

const health: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', {
    schema: {
      operationId: 'healthz',
      summary: 'The process is up',
      description: 'Liveness for an orchestrator: answers as long as the process runs, whatever the database. No key needed.',
      tags: ['Service'],
      security: [],
      response: { 200: documentedResponse('The process is up', Status, { up: { value: { status: 'ok' } } }), ...errorResponses('internal_error') }
    }
  }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', {
    schema: {
      operationId: 'readyz',
      summary: 'The instance can serve: its database answers and it is not shutting down; Redis is reported',
      description: 'Readiness for a load balancer: 503 while the database does not answer within 2 s or the instance is shutting down. Redis being down does not fail it (limits then count per instance). No key needed.',
      tags: ['Service'],
      security: [],
      response: {
        200: documentedResponse('Ready to serve', Readiness, { ready: { summary: 'Without Redis', value: { status: 'ready', redis: 'not configured' } } }),
        ...errorResponses('internal_error', { code: 'service_unavailable', message: 'The database is unreachable' })
      }
    }
  }, async () => {
    if (app.draining) throw apiError('service_unavailable', 'The instance is shutting down')
    try {
      await withDeadline(app.database.ping(), PING_DEADLINE_MS)
    } catch (err) {
      app.log.warn({ err }, 'readiness check failed: database')
      throw apiError('service_unavailable', 'The database is unreachable')
    }
    // Without Redis the instance still serves (rate limits count per instance), so a Redis
    // outage must not take the whole fleet out of the load balancer: it is reported, not failed.
    const redis = app.redis === null ? 'not configured' as const : app.redis.status === 'ready' ? 'ok' as const : 'unavailable' as const
    return { status: 'ready' as const, redis }
  })
}

export default health
