// GET /changes: the feed of what changed in the catalogue and in the calling key's orders.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ChangesPage, ChangesQuery, FEED_LIMIT } from '../../../schemas/changes.ts'
import { conditionalResponses, documentedResponse, ref } from '../../../schemas/common.ts'
import { readChanges } from '../../../services/changes.ts'
import { v1Errors, v1Headers } from './shared.ts'

const FEED_EXAMPLE = {
  items: [
    { id: 'evt_1041', type: 'product.updated', resourceId: 'd3e00000-0000-4000-8000-000000000005', occurredAt: '2026-11-23T09:41:07.512Z', data: {} },
    {
      id: 'evt_1042',
      type: 'order.status_changed',
      resourceId: '7d1c0b2e-4f3a-4e8b-9a61-2c5d8e0f4b17',
      occurredAt: '2026-11-23T10:02:44.101Z',
      data: { orderNumber: '100001', status: 'confirmed', previousStatus: 'pending' }
    }
  ],
  nextCursor: 'evt_1042',
  hasMore: false
}

const changes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/changes', {
    config: { scope: ['products:list', 'orders:list'], conditional: true },
    schema: {
      operationId: 'listChanges',
      summary: 'Follow the changes feed',
      description: `Every change to the catalogue (with products:list) and to your own orders (with orders:list), oldest first, each exactly once.
Send the answer's nextCursor as \`after\` next time. Events appear in the order their changes committed, and never behind a cursor already
handed out, so a reader that follows nextCursor misses nothing. A change shows here about a second after it commits; by then every read
of the resource shows it. Events are kept ${'`CHANGES_RETENTION_DAYS`'} (30 days by default): an older cursor answers 410 cursor_expired.`,
      tags: ['Changes'],
      querystring: ChangesQuery,
      response: {
        ...conditionalResponses(documentedResponse('Events after the cursor, oldest first', ref(ChangesPage), {
          events: { summary: 'A product changed, then an order was confirmed', value: FEED_EXAMPLE }
        }, v1Headers(200)), v1Headers(200)),
        ...v1Errors('invalid_cursor', 'cursor_expired')
      }
    }
  }, async (request) => {
    const apiKey = request.apiKey
    return readChanges(app.database, { apiKeyId: apiKey.id, scopes: apiKey.scopes }, {
      after: request.query.after,
      limit: request.query.limit ?? FEED_LIMIT.default
    }, { settleMs: app.config.READ_SETTLE_MS })
  })
}

export default changes
