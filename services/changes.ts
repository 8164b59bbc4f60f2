// The changes feed: reading it as a key may see it, publishing committed events in feed
// order, and forgetting them after their retention.
import type { Database } from '../db/client.ts'
import { feedBounds, publishEvents, pruneEvents, readEvents, type StoredEvent } from '../db/events.ts'
import { apiError } from '../errors.ts'
import { eventIdOf, positionOfEventId } from '../lib/event-id.ts'
import { deleteInBatches, retentionCutoff } from '../lib/retention.ts'
import type { Scope } from '../lib/api-key-secret.ts'
import type { ChangeEvent, ChangesPage } from '../schemas/changes.ts'

export interface FeedReader {
  apiKeyId: string
  scopes: readonly Scope[]
}

export interface FeedOptions {
  /** How long a published event waits before the feed shows it (see READ_SETTLE_MS). */
  settleMs: number
}

export async function readChanges (database: Database, reader: FeedReader, query: { after?: string, limit: number }, options: FeedOptions): Promise<ChangesPage> {
  const requested = query.after === undefined ? null : positionOfEventId(query.after)
  if (query.after !== undefined && requested === null) throw apiError('invalid_cursor')
  const bounds = await feedBounds(database.db, options.settleMs)
  // No position beyond the last published one was ever handed out.
  if (requested !== null && requested > bounds.published) throw apiError('invalid_cursor')
  if (requested !== null && requested < bounds.prunedThrough) throw apiError('cursor_expired')
  const after = requested ?? bounds.prunedThrough
  if (query.limit === 0) return { items: [], nextCursor: eventIdOf(Math.max(after, bounds.head)), hasMore: false }

  const scope = { apiKeyId: reader.apiKeyId, products: reader.scopes.includes('products:list'), orders: reader.scopes.includes('orders:list') }
  const events = await readEvents(database.db, { after, limit: query.limit + 1, scope, settleMs: options.settleMs })
  const items = events.slice(0, query.limit).map(toWire)
  return {
    items,
    nextCursor: items.length > 0 ? items[items.length - 1]!.id : eventIdOf(after),
    hasMore: events.length > query.limit
  }
}

function toWire (event: StoredEvent): ChangeEvent {
  return {
    id: eventIdOf(event.position),
    type: event.type,
    resourceId: event.resourceId,
    occurredAt: event.occurredAt.toISOString(),
    data: event.data
  }
}

/** Publishes the events committed since the last run (on one instance of the fleet at a time). */
export function publishChanges (database: Database, batch = 1000): Promise<number> {
  return publishEvents(database.db, batch)
}

/** Deletes events older than the retention; returns how many. */
export async function forgetOldChanges (database: Database, retentionDays: number, now = new Date(), batch = 10_000): Promise<number> {
  const cutoff = retentionCutoff(retentionDays, now)
  return deleteInBatches((size) => pruneEvents(database.db, cutoff, size), batch)
}
