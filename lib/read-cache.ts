// A bounded in-memory cache of read responses. Entries die at their own expiry (e.g. when a
// discount starts or ends), with a tag they carry (the products a page holds: an order that
// changes one drops only what shows it), or all at once when the whole catalogue changes.
// The bound is in bytes, each entry counted by the length of its JSON: a cached page of 25
// products weighs as much as 25 cached products, so the memory it takes does not depend on
// what integrators happen to read.
interface Entry<V> { value: V, expiresAt: number, bytes: number, tags: readonly string[] }

export class ReadCache<V = unknown> {
  readonly #entries = new Map<string, Entry<V>>()
  /** Tag → the keys of the entries carrying it. */
  readonly #tagged = new Map<string, Set<string>>()
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
    // Read again: it moves to the back of the eviction order, so hot entries stay.
    this.#entries.delete(key)
    this.#entries.set(key, entry)
    return entry.value
  }

  /** Keeps `value` under `key`; `bytes` is its size (JSON length when not given); `tags` name what it shows. */
  set (key: string, value: V, expiresAt: number, bytes = JSON.stringify(value)?.length ?? 0, tags: readonly string[] = []): void {
    this.#delete(key)
    if (bytes > this.#maxBytes) return
    // Least recently used first.
    while (this.#bytes + bytes > this.#maxBytes) this.#delete(this.#entries.keys().next().value!)
    this.#entries.set(key, { value, expiresAt, bytes, tags })
    this.#bytes += bytes
    for (const tag of tags) {
      let keys = this.#tagged.get(tag)
      if (keys === undefined) this.#tagged.set(tag, keys = new Set())
      keys.add(key)
    }
  }

  /** Drops every entry carrying `tag`; returns how many. */
  dropTagged (tag: string): number {
    const keys = this.#tagged.get(tag)
    if (keys === undefined) return 0
    const n = keys.size
    for (const key of [...keys]) this.#delete(key)
    return n
  }

  /** Drops every entry past its expiry; returns how many. */
  dropExpired (now = Date.now()): number {
    let n = 0
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt <= now) {
        this.#delete(key)
        n++
      }
    }
    return n
  }

  clear (): void {
    this.#entries.clear()
    this.#tagged.clear()
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
    for (const tag of entry.tags) {
      const keys = this.#tagged.get(tag)
      keys?.delete(key)
      if (keys?.size === 0) this.#tagged.delete(tag)
    }
  }
}
