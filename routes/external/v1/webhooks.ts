// /webhooks: a key's own webhook endpoints, their secrets, and the deliveries made to them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import { PAGE_SIZE, documentedResponse, pageWindow, ref, type ResponseExample } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import {
  CreateWebhookBody, DeliveriesQuery, DeliveryPage, DeliveryParams, MAX_ENDPOINTS_PER_KEY, UpdateWebhookBody, WebhookEndpoint, WebhookEndpointList, WebhookParams
} from '../../../schemas/webhooks.ts'
import { duration } from '../../../schemas/wording.ts'
import { openListCursor } from '../../../services/list-cursor.ts'
import {
  SECRET_OVERLAP_MS, changeEndpoint, createEndpoint, getEndpoint, listEndpointDeliveries, listKeyEndpoints, redeliverEvent, removeEndpoint, rotateSecret
} from '../../../services/webhooks/endpoints.ts'
import { NO_DEADLINE_MS, v1Errors, v1Headers, writeWithin } from './shared.ts'

const TAGS = ['Webhooks']
const SCOPE = { scope: 'webhooks:manage' } as const
function ok<T extends TSchema> (description: string, examples: Record<string, ResponseExample>, schema: T) {
  return documentedResponse(description, schema, examples, v1Headers(200))
}

const webhooks: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  const { policy } = app.webhooks

  app.post('/webhooks', {
    config: SCOPE,
    schema: {
      operationId: 'createWebhook',
      summary: 'Create a webhook endpoint',
      description: `Events your key may see in the changes feed are POSTed to the URL as they happen, signed the Standard Webhooks way with the
secret this answer shows (only this once). At most ${MAX_ENDPOINTS_PER_KEY} endpoints a key. The URL must be https:// and its host public: a host that is
or resolves to a loopback, private, link-local or unspecified address answers invalid_webhook_url, saying why.`,
      tags: TAGS,
      body: ref(CreateWebhookBody),
      response: {
        201: documentedResponse('Created; the secret is shown this once', ref(WebhookEndpoint), RESPONSE_EXAMPLES.createWebhook, v1Headers(201)),
        ...v1Errors('invalid_webhook_url', 'webhook_limit_reached', 'invalid_json', 'payload_too_large', 'unsupported_media_type')
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => {
    const endpoint = await writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => createEndpoint(app.database, policy, request.apiKey.id, request.body, deadline))
    return reply.code(201).send(endpoint)
  })

  app.get('/webhooks', {
    config: SCOPE,
    schema: {
      operationId: 'listWebhooks',
      summary: 'List your webhook endpoints',
      description: `Your key's endpoints, oldest first (at most ${MAX_ENDPOINTS_PER_KEY}), without their secrets.`,
      tags: TAGS,
      response: {
        200: ok('Your endpoints', RESPONSE_EXAMPLES.listWebhooks, ref(WebhookEndpointList)),
        ...v1Errors()
      }
    }
  }, async (request) => listKeyEndpoints(app.database, request.apiKey.id))

  app.get('/webhooks/:id', {
    config: SCOPE,
    schema: {
      operationId: 'getWebhook',
      summary: 'Get a webhook endpoint',
      tags: TAGS,
      params: WebhookParams,
      response: { 200: ok('The endpoint', RESPONSE_EXAMPLES.getWebhook, ref(WebhookEndpoint)), ...v1Errors('webhook_not_found') }
    }
  }, async (request) => getEndpoint(app.database, request.apiKey.id, request.params.id))

  app.patch('/webhooks/:id', {
    config: SCOPE,
    schema: {
      operationId: 'updateWebhook',
      summary: 'Change a webhook endpoint',
      description: 'Change its url, events or description, or disable it and enable it again (which clears disabledReason; waiting deliveries resume).',
      tags: TAGS,
      params: WebhookParams,
      body: ref(UpdateWebhookBody),
      response: {
        200: ok('The endpoint as changed', RESPONSE_EXAMPLES.updateWebhook, ref(WebhookEndpoint)),
        ...v1Errors('invalid_webhook_url', 'webhook_not_found', 'invalid_json', 'payload_too_large', 'unsupported_media_type')
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => changeEndpoint(app.database, policy, request.apiKey.id, request.params.id, request.body, deadline)))

  app.delete('/webhooks/:id', {
    config: SCOPE,
    schema: {
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook endpoint',
      description: 'Deletes the endpoint and its deliveries; nothing more is sent to it.',
      tags: TAGS,
      params: WebhookParams,
      response: {
        204: { description: 'Deleted; no body', type: 'null', headers: documentedResponse('', ref(WebhookEndpoint), {}, v1Headers(204)).headers },
        ...v1Errors('webhook_not_found')
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => {
    await writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => removeEndpoint(app.database, request.apiKey.id, request.params.id, deadline))
    return reply.code(204).send(null)
  })

  app.post('/webhooks/:id/rotate-secret', {
    config: SCOPE,
    schema: {
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description: `A new secret, shown this once. For ${duration(SECRET_OVERLAP_MS)} the previous secret signs beside it (the webhook-signature header carries both), so receivers can switch without missing a delivery.`,
      tags: TAGS,
      params: WebhookParams,
      response: {
        200: ok('The endpoint with its new secret', RESPONSE_EXAMPLES.rotateWebhookSecret, ref(WebhookEndpoint)),
        ...v1Errors('webhook_not_found')
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => rotateSecret(app.database, request.apiKey.id, request.params.id, deadline)))

  app.get('/webhooks/:id/deliveries', {
    config: SCOPE,
    schema: {
      operationId: 'listWebhookDeliveries',
      summary: 'List the deliveries to an endpoint',
      description: `Every event queued for the endpoint, newest first, with its state: pending (due at nextAttemptAt), succeeded or failed. ${PAGE_SIZE} a page.`,
      tags: TAGS,
      params: WebhookParams,
      querystring: DeliveriesQuery,
      response: {
        200: ok('A page of deliveries, newest first', RESPONSE_EXAMPLES.listWebhookDeliveries, ref(DeliveryPage)),
        ...v1Errors('webhook_not_found', 'invalid_cursor')
      }
    }
  }, async (request) => {
    const { cursor, page } = request.query
    const { id } = request.params
    const apiKeyId = request.apiKey.id
    const secret = app.cursorSecret
    const window = cursor === undefined ? pageWindow(page) : openListCursor(secret, 'deliveries', cursor, { page }, id).window
    return listEndpointDeliveries(app.database, apiKeyId, id, window, secret)
  })

  app.post('/webhooks/:id/deliveries/:eventId/redeliver', {
    config: SCOPE,
    schema: {
      operationId: 'redeliverWebhook',
      summary: 'Deliver an event again',
      description: 'Makes a new attempt at once (also of a failed or succeeded delivery), with the same webhook-id and body. 404 webhook_not_found when the endpoint has no delivery of that event.',
      tags: TAGS,
      params: DeliveryParams,
      response: {
        202: { description: 'Accepted: the attempt is made at once; follow it in the deliveries', type: 'null', headers: documentedResponse('', ref(WebhookEndpoint), {}, v1Headers(202)).headers },
        ...v1Errors('webhook_not_found')
      }
    },
    handlerTimeout: NO_DEADLINE_MS
  }, async (request, reply) => {
    await writeWithin(reply, config.HANDLER_TIMEOUT_MS, (deadline) => redeliverEvent(app.database, request.apiKey.id, request.params.id, request.params.eventId, deadline))
    return reply.code(202).send(undefined as never)
  })
}

export default webhooks
