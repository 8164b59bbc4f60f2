// Loads by key in batches: every key asked for while the event loop handles one round of
// I/O (all the requests that arrived together) is loaded by one call, made once that round
// is over (setImmediate). Under concurrent reads one statement then serves several requests:
// one round trip to the database, one wake-up of its backend, instead of one each. A lone
// request waits only for the end of its own round.
export type LoadMany<K, V> = (keys: K[]) => Promise<Map<K, V>>

interface Waiter<V> { resolve: (value: V | undefined) => void, reject: (err: unknown) => void }

export class TickBatch<K, V> {
  readonly #loadMany: LoadMany<K, V>
  readonly #maxKeys: number
  #waiting = new Map<K, Array<Waiter<V>>>()
  #scheduled = false

  /** `maxKeys`: the most keys one call loads; more in one round are split into several calls. */
  constructor (loadMany: LoadMany<K, V>, maxKeys: number) {
    this.#loadMany = loadMany
    this.#maxKeys = maxKeys
  }

  /** The value loaded for `key`, or undefined when the load found none. */
  load (key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.#waiting.get(key)
      if (waiters === undefined) this.#waiting.set(key, [{ resolve, reject }])
      else waiters.push({ resolve, reject })
      if (!this.#scheduled) {
        this.#scheduled = true
        setImmediate(() => { this.#flush() })
      }
    })
  }

  #flush (): void {
    const waiting = this.#waiting
    this.#waiting = new Map()
    this.#scheduled = false
    const keys = [...waiting.keys()]
    for (let start = 0; start < keys.length; start += this.#maxKeys) {
      const batch = keys.slice(start, start + this.#maxKeys)
      // A load that throws synchronously fails its batch like one that rejects.
      Promise.resolve().then(() => this.#loadMany(batch)).then(
        (found) => { for (const key of batch) for (const w of waiting.get(key)!) w.resolve(found.get(key)) },
        (err: unknown) => { for (const key of batch) for (const w of waiting.get(key)!) w.reject(err) }
      )
    }
  }
}
