// Webhook endpoints as a key manages them (and the operator oversees them): at most ten a
// key, each seen only by its own key; secrets shown once; deliveries listed and redelivered.
import type { Database } from '../../db/client.ts'
import {
  deleteEndpoint, findEndpoint, insertEndpoint, listDeliveries, listEndpoints, lockKeyEndpoints, redeliver, rotateEndpointSecret, updateEndpoint,
  type DeliveryRow, type EndpointChange, type EndpointRow
} from '../../db/webhooks.ts'
import { apiError } from '../../errors.ts'
import { eventIdOf, positionOfEventId } from '../../lib/event-id.ts'
import { generateWebhookSecret } from '../../lib/webhook-signature.ts'
import { PAGE_SIZE, type ListWindow } from '../../schemas/common.ts'
import {
  MAX_ENDPOINTS_PER_KEY, type CreateWebhookBody, type Delivery, type DeliveryPage, type UpdateWebhookBody, type WebhookEndpoint
} from '../../schemas/webhooks.ts'
import { nextCursor } from '../list-cursor.ts'
import { WriteDeadline } from '../write-deadline.ts'
import type { WebhookUrlPolicy } from './url-policy.ts'

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000

export function toWire (row: EndpointRow, options: { withSecret?: boolean } = {}): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events as WebhookEndpoint['events'],
    description: row.description,
    status: row.status,
    disabledReason: row.disabledReason,
    createdAt: row.createdAt.toISOString(),
    ...(options.withSecret === true ? { secret: row.secret } : {})
  }
}

const notFound = () => apiError('webhook_not_found')

// Each write below commits only within its request's deadline (a 503 past it wrote nothing).

export async function createEndpoint (database: Database, policy: WebhookUrlPolicy, apiKeyId: string, body: CreateWebhookBody, deadline = new WriteDeadline()): Promise<WebhookEndpoint> {
  // Resolved before the transaction: a slow DNS answer holds no lock.
  const url = await policy.check(body.url)
  const row = await deadline.transaction(database.db, async (tx) => {
    if (await lockKeyEndpoints(tx, apiKeyId) >= MAX_ENDPOINTS_PER_KEY) throw apiError('webhook_limit_reached')
    return insertEndpoint(tx, { apiKeyId, url, events: body.events ?? ['*'], description: body.description ?? null, secret: generateWebhookSecret() })
  })
  return toWire(row, { withSecret: true })
}

export async function listKeyEndpoints (database: Database, apiKeyId: string): Promise<{ items: WebhookEndpoint[] }> {
  return { items: (await listEndpoints(database.db, apiKeyId)).map((row) => toWire(row)) }
}

async function ownEndpoint (database: Database, apiKeyId: string, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(database.db, id, apiKeyId)
  if (row === null) throw notFound()
  return row
}

export async function getEndpoint (database: Database, apiKeyId: string, id: string): Promise<WebhookEndpoint> {
  return toWire(await ownEndpoint(database, apiKeyId, id))
}

export async function changeEndpoint (database: Database, policy: WebhookUrlPolicy, apiKeyId: string, id: string, body: UpdateWebhookBody, deadline = new WriteDeadline()): Promise<WebhookEndpoint> {
  // Another key's endpoint is not found before its new URL is looked at.
  await ownEndpoint(database, apiKeyId, id)
  const change: EndpointChange = {}
  if (body.url !== undefined) change.url = await policy.check(body.url)
  if (body.events !== undefined) change.events = body.events
  if (body.description !== undefined) change.description = body.description
  if (body.status !== undefined) change.status = body.status === 'enabled' ? { to: 'enabled' } : { to: 'disabled', reason: 'Disabled by its API key' }
  const row = await deadline.transaction(database.db, (tx) => updateEndpoint(tx, id, apiKeyId, change))
  if (row === null) throw notFound()
  return toWire(row)
}

export async function removeEndpoint (database: Database, apiKeyId: string, id: string, deadline = new WriteDeadline()): Promise<void> {
  if (!await deadline.transaction(database.db, (tx) => deleteEndpoint(tx, id, apiKeyId))) throw notFound()
}

export async function rotateSecret (database: Database, apiKeyId: string, id: string, deadline = new WriteDeadline()): Promise<WebhookEndpoint> {
  const row = await deadline.transaction(database.db, (tx) => rotateEndpointSecret(tx, id, apiKeyId, generateWebhookSecret(), SECRET_OVERLAP_MS))
  if (row === null) throw notFound()
  return toWire(row, { withSecret: true })
}

function deliveryToWire (row: DeliveryRow): Delivery {
  return {
    eventId: eventIdOf(row.position),
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    lastResponseStatus: row.lastResponseStatus,
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null
  }
}

/** A page of the endpoint's deliveries, newest event first; the cursor continues after the last one shown. */
export async function listEndpointDeliveries (database: Database, apiKeyId: string, id: string, window: ListWindow, cursorSecret: string): Promise<DeliveryPage> {
  await ownEndpoint(database, apiKeyId, id)
  const before = window.after === null ? null : Number(window.after[0])
  if (before !== null && !Number.isSafeInteger(before)) throw apiError('invalid_cursor')
  // One more than a page: whether a record follows this one.
  const { rows, total } = await listDeliveries(database.db, id, { limit: PAGE_SIZE + 1, offset: window.offset, before })
  const items = rows.slice(0, PAGE_SIZE)
  const last = items.at(-1)
  return {
    items: items.map(deliveryToWire),
    page: window.page,
    pageSize: PAGE_SIZE,
    total,
    nextCursor: rows.length > PAGE_SIZE && last !== undefined ? nextCursor(cursorSecret, 'deliveries', {}, window.page, [String(last.position), ''], id) : null
  }
}

export async function redeliverEvent (database: Database, apiKeyId: string, id: string, eventId: string, deadline = new WriteDeadline()): Promise<void> {
  await ownEndpoint(database, apiKeyId, id)
  const position = positionOfEventId(eventId)
  if (position === null || !await deadline.transaction(database.db, (tx) => redeliver(tx, id, position))) {
    throw apiError('webhook_not_found', `This endpoint has no delivery of event ${eventId}`)
  }
}

// ---- The operator's view

export async function listAllEndpoints (database: Database, apiKeyId: string | null): Promise<Array<WebhookEndpoint & { apiKeyId: string }>> {
  return (await listEndpoints(database.db, apiKeyId)).map((row) => ({ ...toWire(row), apiKeyId: row.apiKeyId }))
}

/** Enables or disables any key's endpoint; null when no endpoint has that id. */
export async function setEndpointStatus (database: Database, id: string, status: 'enabled' | 'disabled'): Promise<WebhookEndpoint | null> {
  const row = await updateEndpoint(database.db, id, null, { status: status === 'enabled' ? { to: 'enabled' } : { to: 'disabled', reason: 'Disabled by the operator' } })
  return row === null ? null : toWire(row)
}
