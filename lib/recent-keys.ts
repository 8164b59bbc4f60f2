// When each key was last asked for, by a clock of the caller's (the bytes a cache has loaded,
// say), remembered in a fixed table indexed by the key's 32-bit hash. A key is remembered
// until another key lands in its slot: forgetting costs little (the caller treats the key as
// new), and mistaking one key for another needs two keys with the same hash. A cache asks it
// whether a key came back soon enough to have been kept until now (a "doorkeeper", as
// TinyLFU caches call it). No allocation a call.
export class RecentKeys {
  readonly #hashes: Uint32Array
  readonly #clocks: Float64Array
  readonly #mask: number

  /** `size` slots, rounded up to a power of two. */
  constructor (size: number) {
    const slots = 2 ** Math.ceil(Math.log2(Math.max(1, size)))
    this.#hashes = new Uint32Array(slots)
    this.#clocks = new Float64Array(slots)
    this.#mask = slots - 1
  }

  /** Records that `key` is asked for at `clock`; returns when it was before, or null if it is not remembered. */
  previous (key: string, clock: number): number | null {
    // 0 marks an empty slot, so no key hashes to it.
    const hash = fnv1a(key) || 1
    const slot = hash & this.#mask
    const before = this.#hashes[slot] === hash ? this.#clocks[slot]! : null
    this.#hashes[slot] = hash
    this.#clocks[slot] = clock
    return before
  }
}

/** FNV-1a over the string's UTF-16 code units: cheap, and spreads keys that differ in one character. */
function fnv1a (text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}
