// The change log in SQL: writing events inside a change's transaction, publishing committed
// events in feed order, reading the feed, and deleting what is past its retention.
import { sql } from 'drizzle-orm'
import { execute, type Tx } from './client.ts'

export const EVENT_TYPES = ['product.created', 'product.updated', 'product.deleted', 'order.created', 'order.status_changed'] as const
export type EventType = typeof EVENT_TYPES[number]

export interface NewEvent {
  type: EventType
  resourceId: string
  /** The key whose order changed; absent for catalogue events. */
  apiKeyId?: string | null
  data?: Record<string, unknown>
}

export interface StoredEvent {
  position: number
  type: EventType
  resourceId: string
  apiKeyId: string | null
  occurredAt: Date
  data: Record<string, unknown>
}

/** Writes events in the caller's transaction: they commit, or vanish, with the change. */
export async function recordEvents (tx: Tx, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map((e) => sql`(${e.type}, ${e.resourceId}::uuid, ${e.apiKeyId ?? null}::uuid, ${JSON.stringify(e.data ?? {})}::jsonb)`)
  await tx.execute(sql`insert into change_events (type, resource_id, api_key_id, data) values ${sql.join(rows, sql`, `)}`)
}

// Any fixed number: the publisher's advisory lock, shared by every instance.
const PUBLISHER_LOCK = 7_246_002

export interface Published { count: number, catalogueChanged: boolean }

/**
 * Gives committed, unpublished events their feed positions. One publisher at a time (the
 * others skip): its transaction takes the next positions after the last published one and
 * commits before the next publisher starts, so every position handed out later is greater
 * than every position a reader has already seen.
 */
export async function publishEvents (db: Tx, batch: number): Promise<Published> {
  return db.transaction(async (tx) => {
    const [lock] = await execute<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${PUBLISHER_LOCK}) as locked`)
    if (!lock!.locked) return { count: 0, catalogueChanged: false }
    const rows = await execute<{ type: string }>(tx, sql`
      with last as (select coalesce(max(position), 0) as position from change_events),
      waiting as (
        select seq, row_number() over (order by seq) as n from change_events
        where position is null order by seq limit ${batch}
      ), at as (select clock_timestamp() as published_at)
      update change_events e set position = last.position + waiting.n, published_at = at.published_at
      from waiting, last, at where e.seq = waiting.seq
      returning e.type`)
    return { count: rows.length, catalogueChanged: rows.some((r) => r.type.startsWith('product.')) }
  })
}

export interface FeedScope {
  apiKeyId: string
  products: boolean
  orders: boolean
}

/**
 * Published events after `after` that the scope may see, oldest first. Only events
 * published at least `settleMs` ago are shown: by then every instance has dropped what it
 * cached from before the change, so a read that follows the feed sees the change.
 */
export async function readEvents (db: Tx, input: { after: number, limit: number, scope: FeedScope, settleMs: number }): Promise<StoredEvent[]> {
  const { after, limit, scope, settleMs } = input
  const rows = await execute<{ position: string, type: EventType, resource_id: string, api_key_id: string | null, occurred_at: string, data: Record<string, unknown> }>(db, sql`
    select position::text, type, resource_id, api_key_id, occurred_at::text, data from change_events
    where position > ${after}
      and published_at <= clock_timestamp() - make_interval(secs => ${settleMs / 1000})
      and ${visibleTo(scope)}
    order by position limit ${limit}`)
  return rows.map((r) => ({
    position: Number(r.position),
    type: r.type,
    resourceId: r.resource_id,
    apiKeyId: r.api_key_id,
    occurredAt: new Date(r.occurred_at),
    data: r.data
  }))
}

function visibleTo (scope: FeedScope) {
  const products = scope.products ? sql`(api_key_id is null and type like 'product.%')` : sql`false`
  const orders = scope.orders ? sql`(api_key_id = ${scope.apiKeyId}::uuid)` : sql`false`
  return sql`(${products} or ${orders})`
}

/** The feed's current end: the last position a reader may see now (0 when empty). */
export async function feedHead (db: Tx, settleMs: number): Promise<number> {
  const [row] = await execute<{ position: string }>(db, sql`
    select coalesce(max(position), 0)::text as position from change_events
    where published_at <= clock_timestamp() - make_interval(secs => ${settleMs / 1000})`)
  return Number(row!.position)
}

export interface FeedState { cursorSecret: string, prunedThrough: number }

export async function readFeedState (db: Tx): Promise<FeedState> {
  const [row] = await execute<{ cursor_secret: string, pruned_through: string }>(db, sql`
    select cursor_secret, pruned_through::text from change_feed where id = 1`)
  return { cursorSecret: row!.cursor_secret, prunedThrough: Number(row!.pruned_through) }
}

/**
 * Deletes published events older than the retention, a batch at a time, and records the
 * last position deleted (cursors before it have expired). The newest event always stays, so
 * positions keep counting from it. Safe on several instances at once.
 */
export async function pruneEvents (db: Tx, olderThan: Date, batch: number): Promise<number> {
  const rows = await execute<{ position: string | null, count: string }>(db, sql`
    with doomed as (
      select seq from change_events
      where occurred_at < ${olderThan.toISOString()}::timestamptz and position is not null
        and position < (select max(position) from change_events)
      order by position limit ${batch} for update skip locked
    ), deleted as (
      delete from change_events e using doomed where e.seq = doomed.seq returning e.position
    ), moved as (
      update change_feed set pruned_through = greatest(pruned_through, (select max(position) from deleted))
      where id = 1 and exists (select 1 from deleted) returning pruned_through
    )
    select (select pruned_through::text from moved) as position, (select count(*)::text from deleted) as count`)
  return Number(rows[0]!.count)
}
