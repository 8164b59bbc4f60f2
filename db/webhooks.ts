// Webhook endpoints and their deliveries in SQL: the keys' endpoints, the deliveries the
// publisher queues, and the claims, outcomes and releases of the instances that attempt them.
import { and, asc, eq, sql, type SQL } from 'drizzle-orm'
import { execute, type Tx } from './client.ts'
import { eventVisibility } from './event-visibility.ts'
import { webhookDeliveries, webhookEndpoints } from './schema.ts'

export type EndpointStatus = 'enabled' | 'disabled'
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed'

export interface EndpointRow {
  id: string
  apiKeyId: string
  url: string
  events: string[]
  description: string | null
  status: EndpointStatus
  disabledReason: string | null
  createdAt: Date
  secret: string
}

const endpointColumns = {
  id: webhookEndpoints.id,
  apiKeyId: webhookEndpoints.apiKeyId,
  url: webhookEndpoints.url,
  events: webhookEndpoints.events,
  description: webhookEndpoints.description,
  status: webhookEndpoints.status,
  disabledReason: webhookEndpoints.disabledReason,
  createdAt: webhookEndpoints.createdAt,
  secret: webhookEndpoints.secret
}

const ownedBy = (id: string, apiKeyId: string | null) => and(eq(webhookEndpoints.id, id), apiKeyId === null ? undefined : eq(webhookEndpoints.apiKeyId, apiKeyId))

/** Holds the key's row until the transaction ends, so two creates cannot both pass the limit. */
export async function lockKeyEndpoints (tx: Tx, apiKeyId: string): Promise<number> {
  await execute(tx, sql`select id from api_keys where id = ${apiKeyId}::uuid for update`)
  const [row] = await execute<{ count: number }>(tx, sql`select count(*)::int as count from webhook_endpoints where api_key_id = ${apiKeyId}::uuid`)
  return row!.count
}

export async function insertEndpoint (tx: Tx, input: { apiKeyId: string, url: string, events: string[], description: string | null, secret: string }): Promise<EndpointRow> {
  const [row] = await tx.insert(webhookEndpoints).values(input).returning(endpointColumns)
  return row!
}

/** A key's endpoints, or every endpoint (the operator's view), oldest first. */
export async function listEndpoints (db: Tx, apiKeyId: string | null): Promise<EndpointRow[]> {
  return db.select(endpointColumns).from(webhookEndpoints)
    .where(apiKeyId === null ? undefined : eq(webhookEndpoints.apiKeyId, apiKeyId))
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
}

/** The endpoint with that id, of that key (or of any key when apiKeyId is null). */
export async function findEndpoint (db: Tx, id: string, apiKeyId: string | null): Promise<EndpointRow | null> {
  const [row] = await db.select(endpointColumns).from(webhookEndpoints).where(ownedBy(id, apiKeyId))
  return row ?? null
}

export interface EndpointChange {
  url?: string
  events?: string[]
  description?: string | null
  /** With the reason when disabled; enabling clears the reason and the failing window. */
  status?: { to: 'enabled' } | { to: 'disabled', reason: string }
}

export async function updateEndpoint (db: Tx, id: string, apiKeyId: string | null, change: EndpointChange): Promise<EndpointRow | null> {
  const set: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: new Date() }
  if (change.url !== undefined) set.url = change.url
  if (change.events !== undefined) set.events = change.events
  if (change.description !== undefined) set.description = change.description
  if (change.status?.to === 'enabled') Object.assign(set, { status: 'enabled', disabledReason: null, failingSince: null })
  if (change.status?.to === 'disabled') Object.assign(set, { status: 'disabled', disabledReason: change.status.reason })
  const [row] = await db.update(webhookEndpoints).set(set).where(ownedBy(id, apiKeyId)).returning(endpointColumns)
  return row ?? null
}

/**
 * Deletes the endpoint and its deliveries. The deliveries go first: a worker recording an
 * outcome locks its delivery and then the endpoint, so locking in that same order never
 * deadlocks with it (the cascade alone would lock the endpoint first). Run it in a transaction:
 * the two deletes go together or not at all.
 */
export async function deleteEndpoint (tx: Tx, id: string, apiKeyId: string): Promise<boolean> {
  const [owned] = await tx.select({ id: webhookEndpoints.id }).from(webhookEndpoints).where(ownedBy(id, apiKeyId))
  if (owned === undefined) return false
  await tx.delete(webhookDeliveries).where(eq(webhookDeliveries.endpointId, id))
  const rows = await tx.delete(webhookEndpoints).where(ownedBy(id, apiKeyId)).returning({ id: webhookEndpoints.id })
  return rows.length > 0
}

/** A new secret; the current one keeps signing beside it for `overlapMs`. */
export async function rotateEndpointSecret (db: Tx, id: string, apiKeyId: string, secret: string, overlapMs: number): Promise<EndpointRow | null> {
  const [row] = await db.update(webhookEndpoints).set({
    previousSecret: sql`${webhookEndpoints.secret}`,
    previousSecretExpiresAt: sql`now() + make_interval(secs => ${overlapMs / 1000})`,
    secret,
    updatedAt: new Date()
  }).where(ownedBy(id, apiKeyId)).returning(endpointColumns)
  return row ?? null
}

// ---- Deliveries as the key sees them

export interface DeliveryRow {
  position: number
  type: string
  status: DeliveryStatus
  attempts: number
  lastAttemptAt: Date | null
  lastResponseStatus: number | null
  nextAttemptAt: Date | null
}

/** A page of an endpoint's deliveries, newest event first; `before` continues after a position. */
export async function listDeliveries (db: Tx, endpointId: string, window: { limit: number, offset: number, before: number | null }): Promise<{ rows: DeliveryRow[], total: number }> {
  const rows = await db.select({
    position: webhookDeliveries.position,
    type: webhookDeliveries.type,
    status: webhookDeliveries.status,
    attempts: webhookDeliveries.attempts,
    lastAttemptAt: webhookDeliveries.lastAttemptAt,
    lastResponseStatus: webhookDeliveries.lastResponseStatus,
    nextAttemptAt: webhookDeliveries.nextAttemptAt
  }).from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpointId), window.before === null ? undefined : sql`${webhookDeliveries.position} < ${window.before}`))
    .orderBy(sql`${webhookDeliveries.position} desc`)
    .limit(window.limit).offset(window.offset)
  const [count] = await execute<{ total: number }>(db, sql`select count(*)::int as total from webhook_deliveries where endpoint_id = ${endpointId}::uuid`)
  return { rows, total: count!.total }
}

/**
 * Makes the delivery due now (a failed one pending again). One an instance is attempting
 * right now is left to that attempt. False when the endpoint has no delivery of that event.
 */
export async function redeliver (db: Tx, endpointId: string, position: number): Promise<boolean> {
  const rows = await execute<{ id: string }>(db, sql`
    update webhook_deliveries set status = 'pending',
      next_attempt_at = case when lease_until > now() then next_attempt_at else now() end
    where endpoint_id = ${endpointId}::uuid and position = ${position}
    returning id`)
  return rows.length > 0
}

// ---- The publisher's part

/**
 * Queues a delivery for each (enabled endpoint, event) among the events just published,
 * in the publisher's statement: the events its key may see in the feed (the feed's own
 * rule) and its filter names. The key must be usable (active, not expired). `published` names
 * the rows (a CTE's) with the change_events columns a delivery copies.
 */
export function enqueueDeliveries (published: SQL): SQL {
  return sql`
    insert into webhook_deliveries (endpoint_id, position, type, resource_id, data, occurred_at, next_attempt_at)
    select w.id, e.position, e.type, e.resource_id, e.data, e.occurred_at, now()
    from ${published} e
    join webhook_endpoints w on w.status = 'enabled'
      and w.events && array['*', split_part(e.type, '.', 1) || '.*', e.type]
    join api_keys k on k.id = w.api_key_id and k.status = 'active' and (k.expires_at is null or k.expires_at > now())
    where ${eventVisibility({ event: sql`e`, apiKeyId: sql`w.api_key_id`, products: sql`('products:list' = any(k.scopes))`, orders: sql`('orders:list' = any(k.scopes))` })}
    on conflict do nothing`
}

// ---- The workers' part

export interface ClaimedDelivery {
  id: string
  endpointId: string
  position: number
  type: string
  resourceId: string
  data: Record<string, unknown>
  occurredAt: Date
  attempts: number
  url: string
  /** Those that sign: the current secret, and the previous one during its overlap. */
  secrets: string[]
  /** The claim: only the holder of this lease may record the outcome or release it. */
  lease: string
}

interface ClaimRow {
  id: string
  endpoint_id: string
  position: string
  type: string
  resource_id: string
  data: Record<string, unknown>
  occurred_at: string
  attempts: number
  url: string
  secret: string
  previous_secret: string | null
  lease: string
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints for `leaseMs`. A claimed delivery
 * is not due again until the lease ends, so an instance that dies mid-attempt leaves it to
 * another then; SKIP LOCKED keeps instances claiming at once from waiting on each other.
 */
export async function claimDeliveries (db: Tx, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  // The statement is a function of its own (migration 0015) for the planner setting it needs.
  const rows = await execute<ClaimRow>(db, sql`select * from claim_webhook_deliveries(${limit}::integer, ${leaseMs / 1000}::float8)`)
  return rows.map((r) => ({
    id: r.id,
    endpointId: r.endpoint_id,
    position: Number(r.position),
    type: r.type,
    resourceId: r.resource_id,
    data: r.data,
    occurredAt: new Date(r.occurred_at),
    attempts: r.attempts,
    url: r.url,
    secrets: r.previous_secret === null ? [r.secret] : [r.secret, r.previous_secret],
    lease: r.lease
  }))
}

const held = (claim: ClaimedDelivery) => sql`id = ${claim.id}::bigint and lease_until = ${claim.lease}::timestamptz`

/**
 * How stale an endpoint's last_success_at may get before a success writes it again. Only
 * failing_since decides the auto-disable, and a success clears it whenever it is set, so
 * the rule stays exact; skipping the write otherwise keeps concurrent successes to one
 * endpoint from queueing on its row lock.
 */
export const LAST_SUCCESS_REFRESH_SECONDS = 60

/**
 * An attempt's outcome: a 2xx (`ok`), or a failure due again at `nextAttemptAt` (failed for
 * good when that is null).
 */
export interface AttemptOutcome { claim: ClaimedDelivery, ok: boolean, status: number | null, at: Date, nextAttemptAt: Date | null }

export interface EndpointRule {
  /** An endpoint failing with no success for this long is disabled… */
  disableAfterMs: number
  /** …with this disabledReason. */
  reason: string
}

/**
 * Records a batch of outcomes in one statement (the worker gathers those that end while a
 * write is under way). Each row is written only while its lease holds; outcomes of a lost
 * lease are dropped (its new holder attempts again: at least once). Each endpoint touched is
 * updated once, as the batch's outcomes for it in the order of their attempts say:
 * - ending on a success: no longer failing (last_success_at written when it was failing or
 *   is over LAST_SUCCESS_REFRESH_SECONDS old, so successes do not queue on its lock);
 * - ending on a failure after a success of the batch: failing since now;
 * - only failures: failing since its first failure after its last success, and disabled with
 *   the rule's reason once that is longer ago than the rule's window.
 * Endpoint rows are locked in id order, after the deliveries (as deleteEndpoint locks them),
 * so instances recording at once never deadlock. Returns the ids recorded and the endpoints
 * disabled now.
 */
export async function recordOutcomes (db: Tx, outcomes: readonly AttemptOutcome[], rule: EndpointRule): Promise<{ recorded: Set<string>, disabled: Set<string> }> {
  if (outcomes.length === 0) return { recorded: new Set(), disabled: new Set() }
  const input = JSON.stringify(outcomes.map((o) => ({
    id: o.claim.id, lease: o.claim.lease, ok: o.ok, status: o.status, at: o.at.toISOString(), next: o.ok ? null : o.nextAttemptAt?.toISOString() ?? null
  })))
  const window = sql`make_interval(secs => ${rule.disableAfterMs / 1000})`
  const rows = await execute<{ kind: 'delivery' | 'disabled', id: string }>(db, sql`
    with input as (
      select * from jsonb_to_recordset(${input}::jsonb) as i(id bigint, lease timestamptz, ok boolean, status int, at timestamptz, next timestamptz)
    ), done as (
      update webhook_deliveries d set attempts = d.attempts + 1, last_attempt_at = i.at, last_response_status = i.status, lease_until = null,
        status = case when i.ok then 'succeeded' when i.next is null then 'failed' else 'pending' end,
        next_attempt_at = case when i.ok then null else i.next end
      from input i where d.id = i.id and d.lease_until = i.lease
      returning d.id, d.endpoint_id, i.ok, i.at
    ), touched as (
      select endpoint_id, max(at) filter (where ok) as last_ok, max(at) filter (where not ok) as last_failure
      from done group by endpoint_id
    ), locked as (
      select w.id, t.last_ok, t.last_failure, w.failing_since, w.status,
        w.status = 'enabled' and t.last_ok is null and w.failing_since <= now() - ${window} as disabling
      from webhook_endpoints w join touched t on t.endpoint_id = w.id
      where t.last_failure is not null or w.failing_since is not null or w.last_success_at is null
        or w.last_success_at < now() - make_interval(secs => ${LAST_SUCCESS_REFRESH_SECONDS})
      order by w.id for update of w
    ), endpoint as (
      update webhook_endpoints w set
        last_success_at = case when l.last_ok is null then w.last_success_at else now() end,
        failing_since = case
          when l.last_failure is null or l.last_failure < l.last_ok then null
          when l.last_ok is not null then now()
          else coalesce(w.failing_since, now()) end,
        status = case when l.disabling then 'disabled' else w.status end,
        disabled_reason = case when l.disabling then ${rule.reason} else w.disabled_reason end
      from locked l where w.id = l.id
      returning w.id, l.disabling
    )
    select 'delivery' as kind, id::text from done
    union all select 'disabled', id::text from endpoint where disabling`)
  const recorded = new Set<string>()
  const disabled = new Set<string>()
  for (const row of rows) (row.kind === 'delivery' ? recorded : disabled).add(row.id)
  return { recorded, disabled }
}

/** Gives a claimed delivery back unattempted (shutdown): due at once, the attempt not counted. */
export async function releaseDelivery (db: Tx, claim: ClaimedDelivery): Promise<void> {
  await db.execute(sql`update webhook_deliveries set lease_until = null, next_attempt_at = now() where ${held(claim)}`)
}

/** Seconds since the oldest due delivery of an enabled endpoint became due; 0 when none waits. */
export async function oldestDueDeliveryAge (db: Tx): Promise<number> {
  // Read in the due index's order, stopping at the first (migration 0016 says why it is a function).
  const [row] = await execute<{ age: number | null }>(db, sql`select oldest_due_webhook_delivery_age() as age`)
  return Math.max(0, Number(row?.age ?? 0))
}

/** Deletes finished deliveries older than `olderThan`, a batch at a time; returns how many. */
export async function pruneDeliveries (db: Tx, olderThan: Date, batch: number): Promise<number> {
  const rows = await execute<{ count: number }>(db, sql`
    with doomed as (
      select id from webhook_deliveries where status <> 'pending' and created_at < ${olderThan.toISOString()}::timestamptz
      limit ${batch} for update skip locked
    ), deleted as (delete from webhook_deliveries d using doomed where d.id = doomed.id returning 1)
    select count(*)::int as count from deleted`)
  return rows[0]!.count
}
