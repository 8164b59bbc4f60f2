// The changes feed: what changed in the catalogue and in the calling key's orders, oldest first.
import { Type, type Static } from 'typebox'
import { CURSOR_MAX_LENGTH, Timestamp, Uuid, ref } from './common.ts'

export const EVENT_TYPES = ['product.created', 'product.updated', 'product.deleted', 'order.created', 'order.status_changed'] as const
export type EventType = typeof EVENT_TYPES[number]

export const FEED_LIMIT = { default: 100, max: 500 } as const

const EventId = Type.String({
  maxLength: 30,
  description: 'Opaque, in feed order; send it as `after` to read what follows. The same id is the `webhook-id` of a webhook',
  examples: ['evt_1042']
})

export const ChangeEvent = Type.Object({
  id: EventId,
  type: Type.Unsafe<EventType>({
    type: 'string',
    enum: [...EVENT_TYPES],
    description: 'product.created, product.updated and product.deleted carry no data (read the product for its state; a deleted product answers 404); order.created carries orderNumber and status; order.status_changed also previousStatus',
    examples: ['order.status_changed']
  }),
  resourceId: Uuid,
  occurredAt: Timestamp('When the change was made'),
  data: Type.Object({
    orderNumber: Type.Optional(Type.String({ maxLength: 20, examples: ['100001'] })),
    status: Type.Optional(Type.String({ maxLength: 20, examples: ['confirmed'] })),
    previousStatus: Type.Optional(Type.String({ maxLength: 20, examples: ['pending'] }))
  }, { additionalProperties: false })
}, { $id: 'ChangeEvent', title: 'ChangeEvent', additionalProperties: false })
export type ChangeEvent = Static<typeof ChangeEvent>

export const ChangesPage = Type.Object({
  items: Type.Array(ref(ChangeEvent), { maxItems: FEED_LIMIT.max }),
  nextCursor: Type.String({ maxLength: CURSOR_MAX_LENGTH, description: 'Send it as `after` next time: the id of the last event returned, or the `after` you sent when nothing new has happened', examples: ['evt_1042'] }),
  hasMore: Type.Boolean({ description: 'More events follow at once: read again without waiting' })
}, { $id: 'ChangesPage', title: 'ChangesPage', additionalProperties: false })
export type ChangesPage = Static<typeof ChangesPage>

export const ChangesQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: CURSOR_MAX_LENGTH, description: 'The `nextCursor` of the previous answer (or an event id); without it, the feed starts at its oldest kept event' })),
  limit: Type.Optional(Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: FEED_LIMIT.max,
    default: FEED_LIMIT.default,
    description: `Events to return, 0 to ${FEED_LIMIT.max}. 0 returns none and a nextCursor at the current end of the feed: take it before a full crawl, then follow the feed from it`
  }))
}, { additionalProperties: false })
export type ChangesQuery = Static<typeof ChangesQuery>

export const changeSchemas = [ChangeEvent, ChangesPage]
