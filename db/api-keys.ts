// API keys: creation, lookup by hash, operator state changes, rolls, last-use bookkeeping.
import { and, desc, eq, inArray, ne, or, sql } from 'drizzle-orm'
import { generateSecret, hashSecret, type KeyMode, type Scope } from '../lib/api-key-secret.ts'
import type { Db, Tx } from './client.ts'
import { apiKeys } from './schema.ts'

export type KeyState = 'active' | 'inactive' | 'revoked' | 'expired'

export interface ApiKeyRecord {
  id: string
  name: string
  keyHash: string
  scopes: Scope[]
  status: 'active' | 'inactive' | 'revoked'
  expiresAt: Date | null
  rateLimit: number | null
  mode: KeyMode
}

export interface ApiKeySummary {
  id: string
  name: string
  state: KeyState
  scopes: Scope[]
  expiresAt: string | null
  lastUsedAt: string | null
  rateLimit: number | null
  mode: KeyMode
  /** Until when the secret a roll replaced still works; null when none does. */
  previousKeyExpiresAt: string | null
  createdAt: string
}

/** A key found by one of its secrets: `secretExpiresAt` is when that secret stops (a rolled-away one), else null. */
export interface KeyForSecret {
  key: ApiKeyRecord
  secretExpiresAt: Date | null
}

export function keyState (key: Pick<ApiKeyRecord, 'status' | 'expiresAt'>, now = new Date()): KeyState {
  if (key.status !== 'active') return key.status
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired'
  return 'active'
}

export async function createApiKey (db: Tx, input: { name: string, scopes: Scope[], expiresAt?: Date | null, rateLimit?: number | null, mode?: KeyMode }) {
  const mode = input.mode ?? 'live'
  const secret = generateSecret(mode)
  const [row] = await db.insert(apiKeys).values({
    name: input.name,
    keyHash: hashSecret(secret),
    scopes: input.scopes,
    expiresAt: input.expiresAt ?? null,
    rateLimit: input.rateLimit ?? null,
    mode
  }).returning({ id: apiKeys.id })
  return { id: row!.id, name: input.name, key: secret, scopes: input.scopes, expiresAt: input.expiresAt?.toISOString() ?? null, mode }
}

/** The key whose current or previous secret has this hash: one query, either hash indexed. */
export async function findApiKeyByHash (db: Tx, keyHash: string): Promise<KeyForSecret | null> {
  const [row] = await db.select({
    id: apiKeys.id,
    name: apiKeys.name,
    keyHash: apiKeys.keyHash,
    scopes: apiKeys.scopes,
    status: apiKeys.status,
    expiresAt: apiKeys.expiresAt,
    rateLimit: apiKeys.rateLimit,
    mode: apiKeys.mode,
    previousKeyHash: apiKeys.previousKeyHash,
    previousKeyExpiresAt: apiKeys.previousKeyExpiresAt
  }).from(apiKeys).where(or(eq(apiKeys.keyHash, keyHash), eq(apiKeys.previousKeyHash, keyHash)))
  if (!row) return null
  const { previousKeyHash, previousKeyExpiresAt, ...key } = row
  // A previous secret without an end cannot be written by a roll; treated as ended, never as endless.
  const secretExpiresAt = key.keyHash === keyHash ? null : previousKeyExpiresAt ?? new Date(0)
  return { key: { ...key, scopes: key.scopes as Scope[] }, secretExpiresAt }
}

export async function listApiKeys (db: Tx, now = new Date()): Promise<ApiKeySummary[]> {
  const rows = await db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt), apiKeys.id)
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    state: keyState(row, now),
    scopes: row.scopes as Scope[],
    expiresAt: row.expiresAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    rateLimit: row.rateLimit,
    mode: row.mode,
    previousKeyExpiresAt: row.previousKeyExpiresAt !== null && row.previousKeyExpiresAt > now ? row.previousKeyExpiresAt.toISOString() : null,
    createdAt: row.createdAt.toISOString()
  }))
}

/** Changes a key's operator state. A revoked key stays revoked: 'revoked' when asked to change one. */
export async function setApiKeyStatus (db: Tx, id: string, status: 'active' | 'inactive' | 'revoked'): Promise<'ok' | 'not_found' | 'revoked'> {
  // One statement, so a revocation running at the same time can never be undone by it.
  const updated = await db.update(apiKeys).set({ status, updatedAt: new Date() })
    .where(and(eq(apiKeys.id, id), status === 'revoked' ? undefined : ne(apiKeys.status, 'revoked')))
    .returning({ id: apiKeys.id })
  if (updated.length > 0) return 'ok'
  const [current] = await db.select({ status: apiKeys.status }).from(apiKeys).where(eq(apiKeys.id, id))
  return current ? 'revoked' : 'not_found'
}

/**
 * Gives the key a new secret (`secretFor` makes it, from what the key is); the one it replaces
 * works until `graceMs` from now on the database's clock, and an older previous secret ends
 * here. The row is locked, so two rolls at once leave a key with two secrets, never three.
 */
export async function rollApiKey (
  db: Db,
  id: string,
  graceMs: number,
  secretFor: (key: { id: string, mode: KeyMode }) => string
): Promise<{ result: 'ok', key: string, previousKeyExpiresAt: Date } | { result: 'not_found' | 'revoked' }> {
  return db.transaction(async (tx) => {
    const [current] = await tx.select({ id: apiKeys.id, status: apiKeys.status, mode: apiKeys.mode }).from(apiKeys).where(eq(apiKeys.id, id)).for('update')
    if (!current) return { result: 'not_found' as const }
    if (current.status === 'revoked') return { result: 'revoked' as const }
    const secret = secretFor(current)
    const [row] = await tx.update(apiKeys).set({
      previousKeyHash: sql`${apiKeys.keyHash}`,
      previousKeyExpiresAt: sql`now() + ${graceMs} * interval '1 millisecond'`,
      keyHash: hashSecret(secret),
      updatedAt: sql`now()`
    }).where(eq(apiKeys.id, id)).returning({ previousKeyExpiresAt: apiKeys.previousKeyExpiresAt })
    return { result: 'ok' as const, key: secret, previousKeyExpiresAt: row!.previousKeyExpiresAt! }
  })
}

export async function setApiKeyRateLimit (db: Tx, id: string, rateLimit: number | null): Promise<boolean> {
  const rows = await db.update(apiKeys).set({ rateLimit, updatedAt: new Date() }).where(eq(apiKeys.id, id)).returning({ id: apiKeys.id })
  return rows.length > 0
}

export async function countApiKeys (db: Tx): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(apiKeys)
  return row!.n
}

export async function touchApiKeys (db: Tx, ids: string[], at: Date): Promise<void> {
  if (ids.length === 0) return
  await db.update(apiKeys).set({ lastUsedAt: at }).where(inArray(apiKeys.id, ids))
}
