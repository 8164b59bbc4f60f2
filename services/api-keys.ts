// Authenticates secrets through a short-lived cache, so a valid key is not looked up in the
// database on every request while a revoked or deactivated one stops working within
// `ttlMs` on every instance. A secret a roll replaced is cached with its end, so it stops at
// the end of its grace even while cached. Last use is written in batches: the background plugin calls
// `flushLastUsed` on its schedule and once more when the app closes.
import { findApiKeyByHash, keyState, touchApiKeys, type ApiKeyRecord, type KeyForSecret, type KeyState } from '../db/api-keys.ts'
import type { Database } from '../db/client.ts'
import { hashSecret } from '../lib/api-key-secret.ts'

interface Entry { found: KeyForSecret | null, fetchedAt: number }

/** Why a secret is refused: `rolled` is a previous secret past the end of its grace. */
export type AuthFailureReason = 'unknown' | 'rolled' | Exclude<KeyState, 'active'>

export type AuthResult = { ok: true, key: ApiKeyRecord } | { ok: false, reason: AuthFailureReason }

export class ApiKeyCache {
  readonly #database: Database
  readonly #ttlMs: number
  readonly #entries = new Map<string, Entry>()
  readonly #inFlight = new Map<string, Promise<Entry>>()
  readonly #used = new Set<string>()

  constructor (database: Database, options: { ttlMs: number }) {
    this.#database = database
    this.#ttlMs = options.ttlMs
  }

  async authenticate (secret: string, now = Date.now()): Promise<AuthResult> {
    const keyHash = hashSecret(secret)
    let entry = this.#entries.get(keyHash)
    if (entry === undefined || now - entry.fetchedAt >= this.#ttlMs) entry = await this.#load(keyHash, now)
    if (entry.found === null) return { ok: false, reason: 'unknown' }
    const { key, secretExpiresAt } = entry.found
    const state = keyState(key, new Date(now))
    if (state !== 'active') return { ok: false, reason: state }
    if (secretExpiresAt !== null && secretExpiresAt.getTime() <= now) return { ok: false, reason: 'rolled' }
    this.#used.add(key.id)
    return { ok: true, key }
  }

  // Concurrent requests with the same key share one lookup.
  #load (keyHash: string, now: number): Promise<Entry> {
    let pending = this.#inFlight.get(keyHash)
    if (pending === undefined) {
      pending = findApiKeyByHash(this.#database.db, keyHash)
        .then((found) => {
          const entry = { found, fetchedAt: now }
          // Unknown hashes are cached too, but bounded, so guessing cannot grow memory.
          if (this.#entries.size > 10000) this.#entries.clear()
          this.#entries.set(keyHash, entry)
          return entry
        })
        .finally(() => this.#inFlight.delete(keyHash))
      this.#inFlight.set(keyHash, pending)
    }
    return pending
  }

  async flushLastUsed (): Promise<void> {
    if (this.#used.size === 0) return
    const ids = [...this.#used]
    this.#used.clear()
    try {
      await touchApiKeys(this.#database.db, ids, new Date())
    } catch (err) {
      // Kept for the next flush, so a database hiccup does not lose the keys' last use.
      for (const id of ids) this.#used.add(id)
      throw err
    }
  }
}
