// Each instance's cache of catalogue reads. Every committed catalogue change moves the
// catalogue version (a database sequence): the instance that made the change drops its cached
// reads at once, the others when their state poll sees the new version.
import type { Database } from '../db/client.ts'
import { bumpCatalogVersion } from '../db/settings.ts'
import { ReadCache } from '../lib/read-cache.ts'

export interface CatalogCacheOptions {
  /** The cache's bound, in bytes of JSON. */
  bytes: number
  /** Longest a cached read lives when no change is signalled. */
  maxMs: number
  /**
   * Cached reads are served only while the last successful poll began less than this long
   * ago: a change published this long ago has been seen (READ_SETTLE_MS).
   */
  settleMs: number
}

export class CatalogCache {
  /** The catalogue version the cached reads belong to. */
  version = ''
  readonly reads: ReadCache
  readonly #database: Database
  readonly #options: CatalogCacheOptions
  readonly #loading = new Map<string, Promise<unknown>>()
  #polledAt = 0

  constructor (database: Database, options: CatalogCacheOptions) {
    this.#database = database
    this.#options = options
    this.reads = new ReadCache(options.bytes)
  }

  /** What a state poll begun at `polledAt` read: a version that moved drops every cached read. */
  seen (version: string, polledAt: number): void {
    if (version !== this.version) {
      this.version = version
      this.reads.clear()
    }
    this.#polledAt = Math.max(this.#polledAt, polledAt)
  }

  /**
   * Reads through the cache. The result is stored only when no catalogue change was seen
   * while it was read, so a read that raced a change is never kept. It expires at
   * `changesAt` (a discount starting or ending) or after the cache's longest life.
   */
  async cachedRead<V> (key: string, load: () => Promise<{ value: V, changesAt: Array<Date | null> } | null>): Promise<V | null> {
    // Not heard from the database lately (it is slow or unreachable): what is cached may
    // predate a change others already see, so read through.
    if (Date.now() - this.#polledAt >= this.#options.settleMs) return (await load())?.value ?? null
    const hit = this.reads.get(key)
    if (hit !== undefined) return hit as V
    const versionBefore = this.version
    // Concurrent misses of one key share one load (after an import every reader misses at
    // once); the version is part of the key, so no one shares a load begun before a change.
    const loadKey = `${versionBefore}\n${key}`
    let pending = this.#loading.get(loadKey)
    if (pending === undefined) {
      const loadedAt = Date.now()
      pending = load().then((loaded) => {
        if (loaded === null) return null
        if (this.version === versionBefore) this.reads.set(key, loaded.value, this.#expiry(loadedAt, loaded.changesAt))
        return loaded.value
      }).finally(() => this.#loading.delete(loadKey))
      this.#loading.set(loadKey, pending)
    }
    return pending as Promise<V | null>
  }

  #expiry (loadedAt: number, changesAt: Array<Date | null>): number {
    return Math.min(loadedAt + this.#options.maxMs, ...changesAt.filter((d): d is Date => d !== null).map((d) => d.getTime()))
  }

  /**
   * Call after a committed catalogue change: other instances drop their cached reads at
   * their next poll, this one at once.
   */
  async catalogChanged (): Promise<void> {
    const version = await bumpCatalogVersion(this.#database.db)
    if (BigInt(version) > BigInt(this.version || '0')) {
      this.version = version
      this.reads.clear()
    }
  }
}
