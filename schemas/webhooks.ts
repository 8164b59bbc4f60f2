// What integrators send and see of webhooks: their endpoints, and the deliveries to them.
import { Type, type Static } from 'typebox'
import { EVENT_TYPES, type EventType } from './changes.ts'
import { CursorQuery, LIMITS, Nullable, Page, PageQuery, Timestamp, Uuid, ref } from './common.ts'
import { WEBHOOK_SECRET_EXAMPLE, WEBHOOK_URL_EXAMPLE } from './examples.ts'
import { count } from './wording.ts'

export const EVENT_FILTERS = ['*', 'product.*', 'order.*', ...EVENT_TYPES] as const
export type EventFilter = typeof EVENT_FILTERS[number]

export const MAX_ENDPOINTS_PER_KEY = 10
export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const

const Events = Type.Array(Type.Unsafe<EventFilter>({ type: 'string', enum: [...EVENT_FILTERS] }), {
  minItems: 1,
  maxItems: EVENT_FILTERS.length,
  uniqueItems: true,
  description: 'The events to receive: event types of the changes feed, `product.*`, `order.*` or `*` (every event your key may see)',
  examples: [['order.*']]
})

// The URL's rules (https, length, public hosts) answer invalid_webhook_url; the schema only
// bounds what is read.
const Url = Type.String({
  minLength: 1,
  maxLength: 65536,
  description: `Absolute https:// URL of at most ${count(LIMITS.url)} characters whose host is public (not loopback, private, link-local or unspecified, nor resolving to one); otherwise 400 invalid_webhook_url`,
  examples: [WEBHOOK_URL_EXAMPLE]
})

const Description = Nullable(Type.String({ maxLength: 500, description: 'Your note on what the endpoint is for', examples: ['Order sync'] }))

export const WebhookEndpoint = Type.Object({
  id: Uuid,
  url: Type.String({ format: 'uri', maxLength: LIMITS.url, examples: [WEBHOOK_URL_EXAMPLE] }),
  events: Events,
  description: Description,
  status: Type.Unsafe<typeof ENDPOINT_STATUSES[number]>({
    type: 'string',
    enum: [...ENDPOINT_STATUSES],
    description: 'A disabled endpoint receives nothing: events that happen meanwhile are not queued for it, and deliveries already queued wait until it is enabled again',
    examples: ['enabled']
  }),
  disabledReason: Nullable(Type.String({ maxLength: 500, description: 'Why it was disabled; null while enabled', examples: [null] })),
  createdAt: Timestamp('When the endpoint was created'),
  secret: Type.Optional(Type.String({
    pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
    maxLength: 50,
    description: 'Only in the answers of create and rotate-secret: the signing secret, shown this once',
    examples: [WEBHOOK_SECRET_EXAMPLE]
  }))
}, { $id: 'WebhookEndpoint', title: 'WebhookEndpoint', additionalProperties: false })
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

export const WebhookEndpointList = Type.Object({
  items: Type.Array(ref(WebhookEndpoint), { maxItems: MAX_ENDPOINTS_PER_KEY })
}, { $id: 'WebhookEndpointList', title: 'WebhookEndpointList', additionalProperties: false })
export type WebhookEndpointList = Static<typeof WebhookEndpointList>

export const CreateWebhookBody = Type.Object({
  url: Url,
  events: Type.Optional(Events),
  description: Type.Optional(Description)
}, {
  $id: 'CreateWebhookRequest',
  title: 'CreateWebhookRequest',
  additionalProperties: false,
  examples: [{ url: WEBHOOK_URL_EXAMPLE, events: ['order.*'], description: 'Order sync' }]
})
export type CreateWebhookBody = Static<typeof CreateWebhookBody>

export const UpdateWebhookBody = Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  description: Type.Optional(Description),
  status: Type.Optional(Type.Unsafe<typeof ENDPOINT_STATUSES[number]>({ type: 'string', enum: [...ENDPOINT_STATUSES], description: 'enabled clears disabledReason and resumes deliveries' }))
}, {
  $id: 'UpdateWebhookRequest',
  title: 'UpdateWebhookRequest',
  additionalProperties: false,
  examples: [{ status: 'enabled' }]
})
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>

export const WebhookParams = Type.Object({ id: Uuid }, { additionalProperties: false })

export const EVENT_ID_PATTERN = '^evt_(0|[1-9][0-9]{0,15})$'
export const DeliveryParams = Type.Object({
  id: Uuid,
  eventId: Type.String({ pattern: EVENT_ID_PATTERN, maxLength: 30, description: 'The event id (the webhook-id header of the delivery)', examples: ['evt_1042'] })
}, { additionalProperties: false })

export const Delivery = Type.Object({
  eventId: Type.String({ maxLength: 30, description: 'The event\'s id in the changes feed; the webhook-id header', examples: ['evt_1042'] }),
  type: Type.String({ maxLength: 50, examples: ['order.created'] }),
  status: Type.Unsafe<typeof DELIVERY_STATUSES[number]>({
    type: 'string',
    enum: [...DELIVERY_STATUSES],
    description: 'pending until an attempt succeeds (succeeded) or the last retry fails (failed)',
    examples: ['succeeded']
  }),
  attempts: Type.Integer({ format: 'int32', minimum: 0, maximum: 2147483647, description: 'Attempts made so far', examples: [1] }),
  lastAttemptAt: Nullable(Timestamp('When the last attempt began')),
  lastResponseStatus: Nullable(Type.Integer({ format: 'int32', minimum: 0, maximum: 999, description: 'The status the endpoint answered the last attempt with; null when it gave none (timeout, refused connection)', examples: [200] })),
  nextAttemptAt: Nullable(Timestamp('When the next attempt is due; null once it succeeded or failed'))
}, { $id: 'WebhookDelivery', title: 'WebhookDelivery', additionalProperties: false })
export type Delivery = Static<typeof Delivery>

export const DeliveryPage = Page(ref(Delivery), 'WebhookDeliveryPage', 'A page of deliveries to one endpoint, newest event first')
export type DeliveryPage = Static<typeof DeliveryPage>

export const DeliveriesQuery = Type.Object({
  page: Type.Optional(PageQuery),
  cursor: Type.Optional(CursorQuery)
})
export type DeliveriesQuery = Static<typeof DeliveriesQuery>

/** What each delivery POSTs: the feed's event, with its id and resource inside `data`. */
export const WebhookPayload = Type.Object({
  type: Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES], examples: ['order.created'] }),
  timestamp: Timestamp('When the change happened (the feed event\'s occurredAt)'),
  data: Type.Object({
    id: Type.String({ maxLength: 30, description: 'The event id: the same as the webhook-id header and as the changes feed\'s id', examples: ['evt_1042'] }),
    resourceId: Uuid,
    orderNumber: Type.Optional(Type.String({ maxLength: 20, examples: ['100001'] })),
    status: Type.Optional(Type.String({ maxLength: 20, examples: ['pending'] })),
    previousStatus: Type.Optional(Type.String({ maxLength: 20, examples: ['pending'] }))
  }, { additionalProperties: false })
}, {
  $id: 'WebhookPayload',
  title: 'WebhookPayload',
  additionalProperties: false,
  examples: [{ type: 'order.created', timestamp: '2026-11-23T09:41:07.512Z', data: { id: 'evt_1042', resourceId: '7d1c0b2e-4f3a-4e8b-9a61-2c5d8e0f4b17', orderNumber: '100001', status: 'pending' } }]
})
export type WebhookPayload = Static<typeof WebhookPayload>

export const webhookSchemas = [WebhookEndpoint, WebhookEndpointList, CreateWebhookBody, UpdateWebhookBody, Delivery, DeliveryPage, WebhookPayload]
