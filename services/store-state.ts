// What every instance keeps in memory about the store, refreshed by polling the database:
// the settings (maintenance, delivery fee, default country) and the catalogue version,
// whose change drops every cached catalogue read.
import type { Database } from '../db/client.ts'
import { readCursorSecret } from '../db/events.ts'
import { DEFAULT_SETTINGS, bumpCatalogVersion, readStoreState, type StoreSettings } from '../db/settings.ts'
import { ReadCache } from '../lib/read-cache.ts'

export interface StoreStateOptions {
  pollIntervalMs: number
  /** The read cache's bound, in bytes of JSON. */
  cacheBytes: number
  /** Longest a cached read lives when no change is signalled. */
  cacheMaxMs: number
  /**
   * Cached reads are served only while the last successful poll began less than this long
   * ago: a change published this long ago has been seen (READ_SETTLE_MS).
   */
  settleMs: number
  onError: (err: unknown) => void
}

export class StoreState {
  settings: StoreSettings = DEFAULT_SETTINGS
  catalogVersion = ''
  /** Signs list cursors; the same on every instance (it lives in the database). */
  cursorSecret = ''
  readonly catalogCache: ReadCache
  readonly #database: Database
  readonly #options: StoreStateOptions
  readonly #loading = new Map<string, Promise<unknown>>()
  #timer: NodeJS.Timeout | undefined
  #polledAt = 0

  constructor (database: Database, options: StoreStateOptions) {
    this.#database = database
    this.#options = options
    this.catalogCache = new ReadCache(options.cacheBytes)
  }

  async refresh (): Promise<void> {
    const startedAt = Date.now()
    if (this.cursorSecret === '') this.cursorSecret = await readCursorSecret(this.#database.db)
    const state = await readStoreState(this.#database.db)
    this.settings = state.settings
    if (state.catalogVersion !== this.catalogVersion) {
      this.catalogVersion = state.catalogVersion
      this.catalogCache.clear()
    }
    this.#polledAt = Math.max(this.#polledAt, startedAt)
  }

  /** Polls every `pollIntervalMs`; a failed poll keeps the last state and is reported. */
  start (): void {
    const { pollIntervalMs, onError } = this.#options
    const tick = () => {
      this.refresh().catch(onError).finally(() => {
        if (this.#timer !== undefined) this.#timer = setTimeout(tick, pollIntervalMs).unref()
      })
    }
    this.#timer = setTimeout(tick, pollIntervalMs).unref()
  }

  stop (): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /**
   * Reads through the catalogue cache. The result is stored only when no catalogue change
   * was seen while it was read, so a read that raced a change is never kept. It expires at
   * `changesAt` (a discount starting or ending) or after the cache's longest life.
   */
  async cachedRead<V> (key: string, load: () => Promise<{ value: V, changesAt: Array<Date | null> } | null>): Promise<V | null> {
    // Not heard from the database lately (it is slow or unreachable): what is cached may
    // predate a change others already see, so read through.
    if (Date.now() - this.#polledAt >= this.#options.settleMs) return (await load())?.value ?? null
    const hit = this.catalogCache.get(key)
    if (hit !== undefined) return hit as V
    const versionBefore = this.catalogVersion
    // Concurrent misses of one key share one load (after an import every reader misses at
    // once); the version is part of the key, so no one shares a load begun before a change.
    const loadKey = `${versionBefore}\n${key}`
    let pending = this.#loading.get(loadKey)
    if (pending === undefined) {
      const loadedAt = Date.now()
      pending = load().then((loaded) => {
        if (loaded === null) return null
        if (this.catalogVersion === versionBefore) this.catalogCache.set(key, loaded.value, this.#expiry(loadedAt, loaded.changesAt))
        return loaded.value
      }).finally(() => this.#loading.delete(loadKey))
      this.#loading.set(loadKey, pending)
    }
    return pending as Promise<V | null>
  }

  #expiry (loadedAt: number, changesAt: Array<Date | null>): number {
    return Math.min(loadedAt + this.#options.cacheMaxMs, ...changesAt.filter((d): d is Date => d !== null).map((d) => d.getTime()))
  }

  /**
   * Call after a committed catalogue change: other instances drop their cached reads at
   * their next poll, this one at once.
   */
  async catalogChanged (): Promise<void> {
    const version = await bumpCatalogVersion(this.#database.db)
    if (BigInt(version) > BigInt(this.catalogVersion || '0')) {
      this.catalogVersion = version
      this.catalogCache.clear()
    }
  }
}
