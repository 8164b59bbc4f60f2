// GET /changes: the feed of what changed in the catalogue and in the calling key's orders.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ChangesPage, ChangesQuery, FEED_LIMIT } from '../../../schemas/changes.ts'
import { conditionalResponses, documentedResponse, ref } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { days, roughly } from '../../../schemas/wording.ts'
import { readChanges } from '../../../services/changes.ts'
import { v1Errors, v1Headers } from './shared.ts'

const changes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app
  app.get('/changes', {
    config: { scope: ['products:list', 'orders:list'], conditional: true },
    schema: {
      operationId: 'listChanges',
      summary: 'Follow the changes feed',
      description: `Every change to the catalogue (with products:list) and to your own orders (with orders:list), oldest first, each exactly once.
Send the answer's nextCursor as \`after\` next time. Events appear in the order their changes committed, and never behind a cursor already
handed out, so a reader that follows nextCursor misses nothing. A change shows here about ${roughly(config.EVENT_PUBLISH_MS + config.READ_SETTLE_MS)} after it commits; by then every read
of the resource shows it. Events are kept ${days(config.CHANGES_RETENTION_DAYS)}: an older cursor answers 410 cursor_expired.`,
      tags: ['Changes'],
      querystring: ChangesQuery,
      response: {
        ...conditionalResponses(documentedResponse('Events after the cursor, oldest first', ref(ChangesPage), RESPONSE_EXAMPLES.listChanges, v1Headers(200)), v1Headers(200)),
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
