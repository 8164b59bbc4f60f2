// The operator's side of API keys: create (the secret shown once), list, change state,
// roll (a new secret, the old one kept for a grace), change the rate-limit override. Changes
// reach every instance through the key cache's short life (services/api-keys.ts).
import { createApiKey, listApiKeys, rollApiKey, setApiKeyRateLimit, setApiKeyStatus, type ApiKeySummary, type KeyState } from '../db/api-keys.ts'
import type { Database } from '../db/client.ts'
import { apiError } from '../errors.ts'
import { generateSecret, isKeyMode, isScope, KEY_MODES, SCOPES, type KeyMode, type Scope } from '../lib/api-key-secret.ts'

export type { ApiKeySummary }

/** The most requests a window a key's override may allow. */
export const MAX_RATE_LIMIT = 1_000_000_000

/** The longest a rolled-away secret may keep working: an old secret is a leak's window. */
export const MAX_GRACE_MS = 7 * 24 * 3600 * 1000

/** A key to create, its rules checked (`newKey`). */
export interface NewKey {
  name: string
  scopes: Scope[]
  expiresAt: Date | null
  rateLimit: number | null
  mode: KeyMode
}

export interface CreatedKey {
  id: string
  name: string
  /** The secret: shown this once, stored only as its hash. */
  key: string
  scopes: Scope[]
  expiresAt: string | null
  mode: KeyMode
}

/** A key's own requests per window: a whole number from 1 to MAX_RATE_LIMIT (`shown` is what the operator typed). */
export function checkRateLimit (rateLimit: number, shown = String(rateLimit)): number {
  if (!Number.isInteger(rateLimit) || rateLimit < 1 || rateLimit > MAX_RATE_LIMIT) {
    throw apiError('validation_failed', `the rate limit must be a whole number of requests per window from 1 to ${MAX_RATE_LIMIT}, got ${shown}`)
  }
  return rateLimit
}

export interface RolledKey {
  id: string
  /** The new secret: shown this once, stored only as its hash. */
  key: string
  /** When the secret it replaced stops working (now, for a grace of 0). */
  previousKeyExpiresAt: string
}

/** How long a rolled-away secret keeps working: whole milliseconds from 0 to 7 days (`shown` is what the operator typed). */
export function checkGrace (graceMs: number, shown = `${graceMs} ms`): number {
  if (!Number.isInteger(graceMs) || graceMs < 0 || graceMs > MAX_GRACE_MS) {
    throw apiError('validation_failed', `the grace must be from 0 to 7 days (7d), got ${shown}`)
  }
  return graceMs
}

/**
 * The rules of a new key: a name, at least one scope and only known ones, an expiry in the
 * future, a rate limit in range, a mode (live unless asked). Checked before any database is opened.
 */
export function newKey (input: { name: string, scopes: readonly string[], expiresAt?: Date | null, rateLimit?: number | null, mode?: string }, now = new Date()): NewKey {
  const name = input.name.trim()
  if (name === '') throw apiError('validation_failed', 'a key needs a name: who it is for')
  const scopes = [...new Set(input.scopes)]
  if (scopes.length === 0) throw apiError('validation_failed', `a key needs at least one scope: ${SCOPES.join(', ')}`)
  const unknown = scopes.filter((s) => !isScope(s))
  if (unknown.length > 0) throw apiError('validation_failed', `unknown scope ${unknown.join(', ')}; scopes are ${SCOPES.join(', ')}`)
  const expiresAt = input.expiresAt ?? null
  if (expiresAt !== null && expiresAt <= now) throw apiError('validation_failed', `the expiry must be in the future, got ${expiresAt.toISOString()}`)
  const rateLimit = input.rateLimit == null ? null : checkRateLimit(input.rateLimit)
  const mode = input.mode ?? 'live'
  if (!isKeyMode(mode)) throw apiError('validation_failed', `unknown mode ${mode}; modes are ${KEY_MODES.join(', ')}`)
  return { name, scopes: scopes as Scope[], expiresAt, rateLimit, mode }
}

export function createKey (database: Database, key: NewKey): Promise<CreatedKey> {
  return createApiKey(database.db, key)
}

export function listKeys (database: Database): Promise<ApiKeySummary[]> {
  return listApiKeys(database.db)
}

/**
 * Revokes (for good), deactivates or activates a key; returns the state it is in now (an
 * activated key past its expiry is still `expired`). In force on every instance within the
 * key cache's life.
 */
export async function setKeyStatus (database: Database, id: string, status: 'active' | 'inactive' | 'revoked'): Promise<KeyState> {
  const result = await setApiKeyStatus(database.db, id, status)
  if (result === 'not_found') throw apiError('not_found', `no key has id ${id}`)
  if (result === 'revoked') throw apiError('validation_failed', `key ${id} is revoked; a revoked key cannot be used again`)
  return (await listApiKeys(database.db)).find((k) => k.id === id.toLowerCase())?.state ?? status
}

/** Sets the key's own requests per window, or null for the default. */
export async function setKeyRateLimit (database: Database, id: string, rateLimit: number | null): Promise<void> {
  if (rateLimit !== null) checkRateLimit(rateLimit)
  if (!await setApiKeyRateLimit(database.db, id, rateLimit)) throw apiError('not_found', `no key has id ${id}`)
}

/**
 * Gives the key a new secret, returned this once. The one it replaces keeps working for
 * `graceMs` (0: ends now); a previous secret from an earlier roll ends at once. Same key
 * otherwise: id, scopes, orders, webhooks, rate-limit bucket. In force on every instance
 * within the key cache's life; the grace's end exactly, as cached entries carry it.
 */
export async function rollKey (database: Database, id: string, graceMs: number): Promise<RolledKey> {
  checkGrace(graceMs)
  // The new secret takes the form of the key's own: a test key stays a test key (sk_test_…).
  const rolled = await rollApiKey(database.db, id.toLowerCase(), graceMs, (key) => generateSecret(key.mode))
  if (rolled.result !== 'ok') {
    throw rolled.result === 'not_found'
      ? apiError('not_found', `no key has id ${id}`)
      : apiError('validation_failed', `key ${id} is revoked; a revoked key cannot be used again`)
  }
  return { id: id.toLowerCase(), key: rolled.key, previousKeyExpiresAt: rolled.previousKeyExpiresAt.toISOString() }
}
