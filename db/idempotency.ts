// Idempotency-Key records in SQL: a request claims its key in the transaction of its write
// (an order, a hold), stores its response there, and a retry finds that response.
import { sql } from 'drizzle-orm'
import { execute, runStatement, statement, type Tx } from './client.ts'

/** What was stored for an Idempotency-Key. */
export interface IdempotencyRecord {
  requestHash: string
  body: unknown
  /** The response shape the body was stored in. */
  shapeVersion: number
  location: string
}

export interface IdempotencyClaim { apiKeyId: string, key: string, requestHash: string, ttlHours: number, waitMs: number }

const CLAIM = statement(sql`select claim_idempotency_key($1::uuid, $2::text, $3::text, $4::integer, $5::integer) as claimed`)

/**
 * Claims an Idempotency-Key for this transaction: true when it was free (or expired). A
 * concurrent claim holds the row's lock until it commits; this waits at most `waitMs` and
 * then fails with PostgreSQL's lock_not_available (55P03). Nothing else in the transaction
 * has a lock timeout.
 */
export async function claimIdempotencyKey (tx: Tx, claim: IdempotencyClaim): Promise<boolean> {
  const [row] = await runStatement<{ claimed: boolean }>(tx, CLAIM, [claim.apiKeyId, claim.key, claim.requestHash, claim.ttlHours, Math.trunc(claim.waitMs)])
  return row!.claimed
}

// Read when a key was already claimed (a retry): a fixed statement, like the claim and the store.
const FIND_RECORD = statement(sql`select request_hash, response_body, response_version, response_headers ->> 'location' as location
    from idempotency_keys
    where api_key_id = $1::uuid and key = $2::text and expires_at > now() and status_code is not null`)

export async function findIdempotencyRecord (tx: Tx, apiKeyId: string, key: string): Promise<IdempotencyRecord | null> {
  const [row] = await runStatement<{ request_hash: string, response_body: unknown, response_version: number, location: string }>(tx, FIND_RECORD, [apiKeyId, key])
  if (!row) return null
  return { requestHash: row.request_hash, body: row.response_body, shapeVersion: row.response_version, location: row.location }
}

// Written once a request, in the order's transaction: a fixed statement, planned once a connection.
const STORE_RESPONSE = statement(sql`update idempotency_keys
    set status_code = 201, response_body = $3::jsonb, response_version = $4::integer, response_headers = jsonb_build_object('location', $5::text)
    where api_key_id = $1::uuid and key = $2::text`)

export async function storeIdempotentResponse (tx: Tx, apiKeyId: string, key: string, response: { body: unknown, shapeVersion: number, location: string }): Promise<void> {
  await runStatement(tx, STORE_RESPONSE, [apiKeyId, key, JSON.stringify(response.body), response.shapeVersion, response.location])
}

export async function deleteExpiredIdempotencyKeys (db: Tx): Promise<number> {
  const rows = await execute<{ n: number }>(db, sql`with gone as (delete from idempotency_keys where expires_at <= now() returning 1) select count(*)::int as n from gone`)
  return rows[0]!.n
}
