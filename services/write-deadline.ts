// The deadline of a write an integrator sends (an order, a hold, a webhook endpoint's change).
// A 503 from it must mean that nothing was written: a client without an Idempotency-Key would
// retry an order that exists, and a rotated secret it never saw would sign the deliveries.
// So it answers 503 only while the write has not begun to commit: the write's transaction asks
// `beginCommit` last, and past the deadline that throws and the transaction rolls back. Once
// the commit has begun the deadline waits for its outcome (bounded by the statement timeout).
// Both run on the one JavaScript thread, so exactly one of the two wins. A commit PostgreSQL
// refused (contention, which the caller retries) wrote nothing: the deadline holds again for
// the retry, and if it passed meanwhile the write stops there.
import type { Db, Tx } from '../db/client.ts'
import { apiError } from '../errors.ts'

const expired = () => apiError('service_unavailable', 'The write did not finish in time and nothing was written; retry shortly', { headers: { 'retry-after': '1' } })

export class WriteDeadline {
  #state: 'writing' | 'committing' | 'expired' = 'writing'
  /** The deadline has passed, whatever the write was doing then. */
  #passed = false

  /**
   * Runs `write` with `ms` left before the deadline: its result, or 503 service_unavailable
   * when the deadline passes before its commit began (the write then rolls back on its own).
   */
  static async within<T> (ms: number, write: (deadline: WriteDeadline) => Promise<T>): Promise<T> {
    const deadline = new WriteDeadline()
    let timer: NodeJS.Timeout | undefined
    const passed = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        deadline.#passed = true
        if (deadline.#state !== 'writing') return
        deadline.#state = 'expired'
        reject(expired())
      }, Math.max(0, ms))
    })
    try {
      return await Promise.race([write(deadline), passed])
    } finally {
      clearTimeout(timer)
    }
  }

  /** `work` in one transaction, committed only within the deadline. */
  transaction<R> (db: Db, work: (tx: Tx) => Promise<R>): Promise<R> {
    return db.transaction(async (tx) => {
      this.check()
      const result = await work(tx)
      this.beginCommit()
      return result
    })
  }

  /** Throws past the deadline: a write that got its connection too late does nothing. */
  check (): void {
    if (this.#state === 'expired') throw expired()
  }

  /** Called last before COMMIT: past the deadline it throws (the transaction rolls back); after it, the deadline waits. */
  beginCommit (): void {
    this.check()
    this.#state = 'committing'
  }

  /**
   * The transaction rolled back (PostgreSQL said so), so nothing was written, and the write is
   * about to be tried again: it is bound by the deadline again, and past it this throws.
   */
  rolledBack (): void {
    this.#state = this.#passed ? 'expired' : 'writing'
    this.check()
  }
}
