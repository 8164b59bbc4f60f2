// A bounded in-memory cache of read responses. Entries die at their own expiry
// (e.g. when a discount starts or ends) or all at once when the catalogue version changes.
export class ReadCache<V = unknown> {
  readonly #entries = new Map<string, { value: V, expiresAt: number }>()
  readonly #maxEntries: number

  constructor (maxEntries = 20_000) {
    this.#maxEntries = maxEntries
  }

  get (key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.value
  }

  set (key: string, value: V, expiresAt: number): void {
    // A key set again moves to the back instead of evicting another entry.
    if (!this.#entries.delete(key) && this.#entries.size >= this.#maxEntries) {
      // Oldest insertion first: good enough for a cache that is cleared on every catalogue change.
      this.#entries.delete(this.#entries.keys().next().value!)
    }
    this.#entries.set(key, { value, expiresAt })
  }

  clear (): void {
    this.#entries.clear()
  }

  get size (): number {
    return this.#entries.size
  }
}
