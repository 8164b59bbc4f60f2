// API keys: creation, lookup by hash, operator state changes, last-use bookkeeping.
import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm'
import { generateSecret, hashSecret, type KeyMode, type Scope } from '../lib/api-key-secret.ts'
import type { Tx } from './client.ts'
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
  createdAt: string
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

export async function findApiKeyByHash (db: Tx, keyHash: string): Promise<ApiKeyRecord | null> {
  const [row] = await db.select({
    id: apiKeys.id,
    name: apiKeys.name,
    keyHash: apiKeys.keyHash,
    scopes: apiKeys.scopes,
    status: apiKeys.status,
    expiresAt: apiKeys.expiresAt,
    rateLimit: apiKeys.rateLimit,
    mode: apiKeys.mode
  }).from(apiKeys).where(eq(apiKeys.keyHash, keyHash))
  return row ? { ...row, scopes: row.scopes as Scope[] } : null
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
