// The request counter of @fastify/rate-limit (its `store` option): it counts in Redis when it can (shared by
// every instance) and in this process when Redis cannot answer, going back to Redis as
// soon as it does. One bucket per key across all routes (no per-route children).
import type { Redis } from 'ioredis'

type Callback = (err: Error | null, result: { current: number, ttl: number }) => void

// INCR with the window's expiry set on the first hit; returns [count, ttl in ms].
const INCREMENT = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {current, ttl}`

class LocalCounts {
  readonly #windows = new Map<string, { count: number, resetAt: number }>()

  incr (key: string, windowMs: number, now = Date.now()): { current: number, ttl: number } {
    let entry = this.#windows.get(key)
    if (entry === undefined || entry.resetAt <= now) {
      if (this.#windows.size > 50_000) this.#sweep(now)
      entry = { count: 0, resetAt: now + windowMs }
      this.#windows.set(key, entry)
    }
    entry.count++
    return { current: entry.count, ttl: entry.resetAt - now }
  }

  #sweep (now: number) {
    for (const [key, entry] of this.#windows) if (entry.resetAt <= now) this.#windows.delete(key)
  }
}

export interface CounterEvents {
  /** Redis failed; the count fell back to this instance. Called at most once per outage. */
  onFallback: (err: Error) => void
  /** Redis answers again after an outage. */
  onRecovered: () => void
}

export function fleetRateLimitCounter (redis: Redis | null, events: CounterEvents) {
  const local = new LocalCounts()
  let degraded = false
  redis?.defineCommand('storefrontRateLimit', { numberOfKeys: 1, lua: INCREMENT })

  return class FleetRateLimitCounter {
    incr (key: string, cb: Callback, timeWindow: number): void {
      if (redis === null || redis.status !== 'ready') {
        if (redis !== null && !degraded) {
          degraded = true
          events.onFallback(new Error(`redis is ${redis.status}`))
        }
        cb(null, local.incr(key, timeWindow))
        return
      }
      (redis as unknown as { storefrontRateLimit: (k: string, w: number) => Promise<[number, number]> })
        .storefrontRateLimit(`storefront:rl:${key}`, timeWindow)
        .then(([current, ttl]) => {
          if (degraded) {
            degraded = false
            events.onRecovered()
          }
          cb(null, { current, ttl })
        }, (err: Error) => {
          if (!degraded) {
            degraded = true
            events.onFallback(err)
          }
          cb(null, local.incr(key, timeWindow))
        })
    }

    child () {
      return this
    }
  }
}
