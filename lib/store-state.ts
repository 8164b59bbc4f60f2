// What every instance keeps in memory about the store, refreshed by polling the database:
// the settings (maintenance, delivery fee, default country) and the catalogue version,
// whose change drops every cached catalogue read.
import type { Database } from '../db/client.ts'
import { DEFAULT_SETTINGS, readStoreState, type StoreSettings } from '../db/settings.ts'
import { ReadCache } from './read-cache.ts'

export class StoreState {
  settings: StoreSettings = DEFAULT_SETTINGS
  catalogVersion = ''
  readonly catalogCache = new ReadCache()
  readonly #database: Database
  readonly #loading = new Map<string, Promise<unknown>>()
  #timer: NodeJS.Timeout | undefined
  #onError: (err: unknown) => void

  constructor (database: Database, onError: (err: unknown) => void) {
    this.#database = database
    this.#onError = onError
  }

  async refresh (): Promise<void> {
    const state = await readStoreState(this.#database.db)
    this.settings = state.settings
    if (state.catalogVersion !== this.catalogVersion) {
      this.catalogVersion = state.catalogVersion
      this.catalogCache.clear()
    }
  }

  /** Polls every `intervalMs`; a failed poll keeps the last state and is reported. */
  start (intervalMs: number): void {
    const tick = () => {
      this.refresh().catch(this.#onError).finally(() => {
        if (this.#timer !== undefined) this.#timer = setTimeout(tick, intervalMs).unref()
      })
    }
    this.#timer = setTimeout(tick, intervalMs).unref()
  }

  stop (): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
  }

  /**
   * Reads through the catalogue cache. The result is stored only when no catalogue change
   * was seen while it was read, so a read that raced a change is never kept.
   */
  async cachedRead<V> (key: string, load: () => Promise<{ value: V, expiresAt: number } | null>): Promise<V | null> {
    const hit = this.catalogCache.get(key)
    if (hit !== undefined) return hit as V
    const versionBefore = this.catalogVersion
    // Concurrent misses of one key share one load (after an import every reader misses at
    // once); the version is part of the key, so no one shares a load begun before a change.
    const loadKey = `${versionBefore}\n${key}`
    let pending = this.#loading.get(loadKey)
    if (pending === undefined) {
      pending = load().then((loaded) => {
        if (loaded === null) return null
        if (this.catalogVersion === versionBefore) this.catalogCache.set(key, loaded.value, loaded.expiresAt)
        return loaded.value
      }).finally(() => this.#loading.delete(loadKey))
      this.#loading.set(loadKey, pending)
    }
    return pending as Promise<V | null>
  }

  /** Drops cached reads at once after this instance changed the catalogue (others see it at their next poll). */
  noteCatalogChange (version: string): void {
    if (BigInt(version) > BigInt(this.catalogVersion || '0')) {
      this.catalogVersion = version
      this.catalogCache.clear()
    }
  }
}
