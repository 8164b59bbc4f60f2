// Each instance's cache of catalogue reads. Every committed catalogue change moves the
// catalogue version (a database sequence). A change to some products (stock taken by an
// order, a discount window opening or closing) drops only the cached reads that show them
// (and the lists whose membership follows stock or updatedAt): at once on the instance that
// made it, on the others when their state poll reads the products the feed has published
// since their last poll. A change to the whole catalogue (an import) moves the reset version
// too, and every instance drops everything.
//
// A read is kept only when the same read missed before, and came back within as many bytes
// of other misses as the cache holds: one that comes back later would have been evicted by
// then anyway (the eviction is least recently used). Under reads that rarely repeat (a crawl,
// uniformly random ids) keeping each one cost more than its rare hit saved: its bookkeeping,
// and the old-generation garbage it became when pushed out.
//
// Searches have a second, smaller cache of their own: which products a search finds (one
// page's ids and the total), kept at its first miss. Finding them reads every match, a
// thousand rows and more, while the page's documents are read like any list page's; and the
// matches change only with an import, or with stock when the search also filters by
// availability or updatedSince. So a search read while stock changed is still kept, unless
// one of those filters it: under a steady flow of orders (a change each) few would be kept.
import type { Database } from '../db/client.ts'
import { bumpCatalogVersion, type CatalogState } from '../db/settings.ts'
import { ReadCache } from '../lib/read-cache.ts'
import { RecentKeys } from '../lib/recent-keys.ts'

export interface CatalogCacheOptions {
  /** The cache's bound, in bytes of JSON. */
  bytes: number
  /** The search matches' cache's bound, in bytes of JSON. */
  searchBytes: number
  /** Longest a cached read lives when no change is signalled. */
  maxMs: number
  /**
   * Cached reads are served only while the last successful poll began less than this long
   * ago: a change published this long ago has been seen (READ_SETTLE_MS).
   */
  settleMs: number
}

/** What a cached read loads: its value, when it goes stale, its size and what it shows. */
export interface Loaded<V> {
  value: V
  changesAt: Array<Date | null>
  /** Its size in bytes (its JSON's length when absent). */
  bytes?: number
  /** `productTag(id)` for each product it shows; VOLATILE when stock or updatedAt decide what it holds. */
  tags?: string[]
}

export const productTag = (id: string) => `product:${id.toLowerCase()}`
/** Lists filtered by availability or updatedSince: a stock change may add a product to them. */
export const VOLATILE = 'volatile'

export class CatalogCache {
  /** The catalogue version the cached reads belong to (replica reads are held to it). */
  version = ''
  /** The last reset version seen: a new one drops every cached read. */
  resetVersion = ''
  /** The last feed position the poll has read the changed products up to; null before the first poll. */
  position: number | null = null
  readonly reads: ReadCache
  readonly searches: ReadCache
  readonly #database: Database
  readonly #options: CatalogCacheOptions
  readonly #loading = new Map<string, Promise<unknown>>()
  readonly #recentMisses: RecentKeys
  /** The bytes of every read loaded so far: the clock misses are remembered by. */
  #missedBytes = 0
  #polledAt = 0
  /** Moves with every change this instance learns of: a read begun before one is not kept. */
  #generation = 0
  /** Moves when the whole cache is dropped (an import): what only an import changes is held to it. */
  #resetGeneration = 0

  constructor (database: Database, options: CatalogCacheOptions) {
    this.#database = database
    this.#options = options
    this.reads = new ReadCache(options.bytes)
    this.searches = new ReadCache(options.searchBytes)
    // Enough slots for the misses of one cache's worth of bytes, at about a product each.
    this.#recentMisses = new RecentKeys(Math.max(1024, options.bytes / 512))
  }

  /** What a state poll begun at `polledAt` read of the catalogue. */
  seen (state: CatalogState, polledAt: number): void {
    if (state.resetVersion !== this.resetVersion || state.changed === null) {
      // A new reset version, the first poll, or more changed products than the poll reads.
      this.reads.clear()
      this.searches.clear()
      this.#generation++
      this.#resetGeneration++
    } else if (state.changed.length > 0) {
      this.#drop(state.changed)
    }
    this.resetVersion = state.resetVersion
    this.position = state.position
    this.#moveTo(state.version)
    this.#polledAt = Math.max(this.#polledAt, polledAt)
    // An idle instance gives back what has expired rather than holding it until it is read.
    this.reads.dropExpired()
    this.searches.dropExpired()
  }

  /**
   * Reads through the cache. The result is stored only when no catalogue change was seen
   * while it was read, so a read that raced a change is never kept, and only when it missed
   * lately too (above). It expires at `changesAt` (a discount starting or ending) or after
   * the cache's longest life.
   */
  cachedRead<V> (key: string, load: () => Promise<Loaded<V> | null>): Promise<V | null> {
    return this.#readThrough(this.reads, key, load, { onlyWhenBackSoon: true, showsProducts: true })
  }

  /**
   * A search's matches through their own cache: kept at the first miss, and though stock
   * changed meanwhile unless they are VOLATILE (they show no product's document, only ids).
   */
  cachedMatches<V> (key: string, load: () => Promise<Loaded<V> | null>): Promise<V | null> {
    return this.#readThrough(this.searches, key, load, { onlyWhenBackSoon: false, showsProducts: false })
  }

  async #readThrough<V> (cache: ReadCache, key: string, load: () => Promise<Loaded<V> | null>, { onlyWhenBackSoon, showsProducts }: { onlyWhenBackSoon: boolean, showsProducts: boolean }): Promise<V | null> {
    // Not heard from the database lately (it is slow or unreachable): what is cached may
    // predate a change others already see, so read through.
    if (Date.now() - this.#polledAt >= this.#options.settleMs) return (await load())?.value ?? null
    const hit = cache.get(key)
    if (hit !== undefined) return hit as V
    const generationBefore = this.#generation
    const resetGenerationBefore = this.#resetGeneration
    // Concurrent misses of one key share one load (after an import every reader misses at
    // once); the generation is part of the key, so no one shares a load begun before a change.
    const loadKey = `${generationBefore}\n${key}`
    let pending = this.#loading.get(loadKey)
    if (pending === undefined) {
      const loadedAt = Date.now()
      const missedAt = this.#missedBytes
      const missedBefore = onlyWhenBackSoon ? this.#recentMisses.previous(key, missedAt) : null
      pending = load().then((loaded) => {
        if (loaded === null) return null
        const bytes = loaded.bytes ?? JSON.stringify(loaded.value)?.length ?? 0
        let keep = true
        if (onlyWhenBackSoon) {
          this.#missedBytes += bytes
          keep = missedBefore !== null && missedAt - missedBefore <= this.#options.bytes
        }
        const changedMeanwhile = showsProducts || loaded.tags?.includes(VOLATILE) === true
          ? this.#generation !== generationBefore
          : this.#resetGeneration !== resetGenerationBefore
        if (keep && !changedMeanwhile) cache.set(key, loaded.value, this.#expiry(loadedAt, loaded.changesAt), bytes, loaded.tags)
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
   * Call after a committed change to these products: this instance drops what shows them at
   * once; other instances drop them when the feed publishes their events. With replicas it
   * also moves the catalogue version in the database, so no replica that may predate the
   * change answers this instance's reads (without, that round trip is spared).
   */
  async productsChanged (productIds: readonly string[]): Promise<void> {
    if (this.#database.replicated) this.#moveTo(await bumpCatalogVersion(this.#database.db))
    this.#drop(productIds)
  }

  #drop (productIds: readonly string[]): void {
    for (const id of productIds) this.reads.dropTagged(productTag(id))
    this.reads.dropTagged(VOLATILE)
    this.searches.dropTagged(VOLATILE)
    this.#generation++
  }

  // Only forward: a poll begun before this instance's own bump may answer after it.
  #moveTo (version: string): void {
    if (this.version === '' || BigInt(version) > BigInt(this.version)) {
      this.version = version
      this.#generation++
    }
  }
}
