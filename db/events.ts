// The change log in SQL: writing events inside a change's transaction, publishing committed
// events in feed order, reading the feed, and deleting what is past its retention.
import { sql, type SQL } from 'drizzle-orm'
import { EVENT_TYPES, type EventType } from '../schemas/changes.ts'
import { execute, type Tx } from './client.ts'
import { eventVisibility } from './event-visibility.ts'
import { ADVISORY_LOCKS } from './locks.ts'
import { nextCatalogVersion } from './settings.ts'
import { enqueueDeliveries } from './webhooks.ts'

export { EVENT_TYPES, type EventType } from '../schemas/changes.ts'

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

/** An event type chosen per row: `then` where the condition holds, `else` elsewhere. */
export interface EventTypeChoice {
  when: SQL
  then: EventType
  else: EventType
}

/**
 * Rows of a statement that become events: usually a CTE's rows, as the change that makes
 * them is written, so the events commit with it in the same round trip.
 */
export interface EventRows {
  /** What the rows are selected from (a CTE's name, say). */
  from: SQL
  type: EventType | EventTypeChoice
  resourceId: SQL
  /** The key whose order changed; catalogue events have none. */
  apiKeyId?: SQL
  data?: SQL
}

/**
 * A type as an SQL literal. The union is checked by the compiler; the check here holds
 * against a value forced past it, since the literal is spliced into the statement.
 */
function typeLiteral (type: EventType): SQL {
  if (!(EVENT_TYPES as readonly string[]).includes(type)) throw new Error(`not an event type: ${String(type)}`)
  return sql.raw(`'${type}'`)
}

const typeOf = (type: EventRows['type']) => typeof type === 'string'
  ? typeLiteral(type)
  : sql`case when ${type.when} then ${typeLiteral(type.then)} else ${typeLiteral(type.else)} end`

/**
 * The one INSERT into the change log, to fold into the statement that makes the change (as
 * a CTE) or to run alone: from the rows of a statement, or from a list of events.
 */
export function insertEvents (source: EventRows | readonly NewEvent[]): SQL {
  const into = sql`insert into change_events (type, resource_id, api_key_id, data)`
  if (isEventList(source)) {
    // An empty VALUES list is no statement: the caller skips the write instead.
    if (source.length === 0) throw new Error('insertEvents: no events')
    const rows = source.map((e) => sql`(${typeLiteral(e.type)}, ${e.resourceId}::uuid, ${e.apiKeyId ?? null}::uuid, ${JSON.stringify(e.data ?? {})}::jsonb)`)
    return sql`${into} values ${sql.join(rows, sql`, `)}`
  }
  return sql`${into}
      select ${typeOf(source.type)}, ${source.resourceId}, ${source.apiKeyId ?? sql`null::uuid`}, ${source.data ?? sql`'{}'::jsonb`} from ${source.from}`
}

const isEventList = (source: EventRows | readonly NewEvent[]): source is readonly NewEvent[] => Array.isArray(source)

/** Writes events in the caller's transaction: they commit, or vanish, with the change. */
export async function recordEvents (tx: Tx, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return
  await tx.execute(insertEvents(events))
}

/**
 * Gives committed, unpublished events their feed positions; returns how many. One publisher
 * at a time (the others skip): its transaction takes the next positions after the last
 * published one and commits before the next publisher starts, so every position handed out
 * later is greater than every position a reader has already seen. When catalogue events are
 * among them, the catalogue version moves in the same transaction, so every instance drops
 * its cached reads before the feed shows them. Their webhook deliveries are queued with them.
 */
export async function publishEvents (db: Tx, batch: number): Promise<number> {
  // Most runs find nothing: one cheap read on the partial index, no transaction.
  const [waiting] = await execute<{ seq: string }>(db, sql`select seq from change_events where position is null limit 1`)
  if (waiting === undefined) return 0
  return db.transaction(async (tx) => {
    // Two statements sent together (one round trip). The second reads the positions in a
    // snapshot it takes once the first has the lock, so it sees every one the previous
    // publisher committed; without the lock it publishes nothing.
    const locking = execute(tx, sql`select set_config('storefront.publisher', pg_try_advisory_xact_lock(${ADVISORY_LOCKS.eventPublisher})::text, true)`)
    const publishing = execute<{ published: number }>(tx, sql`
      with batch as (
        select seq from change_events
        where position is null and current_setting('storefront.publisher', true) = 'true'
        order by seq limit ${batch}),
      -- Numbered by seq, not by its text (which would put 10 before 2).
      numbered as (select seq, row_number() over (order by seq) as n from batch),
      last as (select coalesce(max(position), 0) as position from change_events),
      -- One instant for the whole batch: the feed shows a prefix of positions, never a hole.
      stamp as (select clock_timestamp() as at),
      published as (
        update change_events e set position = last.position + numbered.n, published_at = stamp.at
        from numbered, last, stamp where e.seq = numbered.seq
        returning e.position, e.type, e.resource_id, e.api_key_id, e.data, e.occurred_at),
      catalogue as (select ${nextCatalogVersion} from published where type like 'product.%' limit 1),
      -- Published means queued: the deliveries commit with the positions.
      queued as (${enqueueDeliveries(sql`published`)})
      select (select count(*)::int from published) as published, (select count(*) from catalogue) as moved`)
    const [, [row]] = await Promise.all([locking, publishing])
    return row!.published
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
  const rows = await execute<{ feed_position: string, type: EventType, resource_id: string, api_key_id: string | null, occurred_at: string, data: Record<string, unknown> }>(db, sql`
    select position::text as feed_position, type, resource_id, api_key_id, occurred_at::text, data from change_events
    where position > ${after}
      and published_at <= ${settledBefore(settleMs)}
      and ${visibleTo(scope)}
    order by position limit ${limit}`)
  return rows.map((r) => ({
    position: Number(r.feed_position),
    type: r.type,
    resourceId: r.resource_id,
    apiKeyId: r.api_key_id,
    occurredAt: new Date(r.occurred_at),
    data: r.data
  }))
}

// One instant for the whole statement (clock_timestamp() alone would move from row to row,
// and a scan crossing it could show a later event while an earlier one is still hidden).
const settledBefore = (settleMs: number) => sql`(select clock_timestamp() - make_interval(secs => ${settleMs / 1000}))`

function visibleTo (scope: FeedScope) {
  return eventVisibility({
    event: sql`change_events`,
    apiKeyId: sql`${scope.apiKeyId}::uuid`,
    products: scope.products ? sql`true` : sql`false`,
    orders: scope.orders ? sql`true` : sql`false`
  })
}

/**
 * Where the feed stands: the last position a reader may see now (0 when empty), the last
 * position published at all, and the last one deleted by the retention cleanup.
 */
export async function feedBounds (db: Tx, settleMs: number): Promise<{ head: number, published: number, prunedThrough: number }> {
  const [row] = await execute<{ head: string, published: string, pruned_through: string }>(db, sql`
    select
      coalesce((select max(position) from change_events
        where published_at <= ${settledBefore(settleMs)}), 0)::text as head,
      coalesce((select max(position) from change_events), 0)::text as published,
      (select pruned_through from change_feed where id = 1)::text as pruned_through`)
  return { head: Number(row!.head), published: Number(row!.published), prunedThrough: Number(row!.pruned_through) }
}

export async function readCursorSecret (db: Tx): Promise<string> {
  const [row] = await execute<{ cursor_secret: string }>(db, sql`select cursor_secret from change_feed where id = 1`)
  return row!.cursor_secret
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
