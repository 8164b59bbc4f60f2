// What every /external/v1 operation shares: its common error responses and cache lifetimes.
import { errorResponses } from '../../../schemas/common.ts'

export const commonErrors = errorResponses(
  [401, 'API key missing, malformed, unknown, inactive, revoked or expired (invalid_api_key)'],
  [403, 'The key lacks this operation\'s scope (insufficient_scope)'],
  [429, 'Rate limit exceeded (rate_limit_exceeded); see Retry-After'],
  [500, 'Unexpected failure (internal_error)'],
  [503, 'The database is unreachable (service_unavailable)']
)

/** Upper bound on how long a cached read lives even if no change is ever signalled. */
export const MAX_CACHE_MS = 60_000

/** A cached read expires at the earliest price change it contains, or after MAX_CACHE_MS. */
export function cacheExpiry (now: Date, priceChanges: Array<Date | null>): number {
  return Math.min(now.getTime() + MAX_CACHE_MS, ...priceChanges.filter((d): d is Date => d !== null).map((d) => d.getTime()))
}
