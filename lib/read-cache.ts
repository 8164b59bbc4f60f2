// A bounded in-memory cache of read responses. Entries die at their own expiry
// (e.g. when a discount starts or ends) or all at once when the catalogue version changes.
// The bound is in bytes, each entry counted by the length of its JSON: a cached page of 25
// products weighs as much as 25 cached products, so the memory it takes does not depend on
// what integrators happen to read.
export class ReadCache<V = unknown> {
  readonly #entries = new Map<string, { value: V, expiresAt: number, bytes: number }>()
  readonly #maxBytes: number
  #bytes = 0

  constructor (maxBytes: number) {
    this.#maxBytes = maxBytes
  }

  get (key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= now) {
      this.#delete(key)
      return undefined
    }
    return entry.value
  }

  /** Keeps `value` under `key`; `bytes` is its size (JSON length when not given). */
  set (key: string, value: V, expiresAt: number, bytes = JSON.stringify(value)?.length ?? 0): void {
    this.#delete(key)
    if (bytes > this.#maxBytes) return
    // Oldest insertion first: good enough for a cache that is cleared on every catalogue change.
    while (this.#bytes + bytes > this.#maxBytes) this.#delete(this.#entries.keys().next().value!)
    this.#entries.set(key, { value, expiresAt, bytes })
    this.#bytes += bytes
  }

  clear (): void {
    this.#entries.clear()
    this.#bytes = 0
  }

  get size (): number {
    return this.#entries.size
  }

  /** The sum of the entries' sizes. */
  get bytes (): number {
    return this.#bytes
  }

  #delete (key: string): void {
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    this.#entries.delete(key)
    this.#bytes -= entry.bytes
  }
}
