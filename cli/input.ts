// The command line's text turned into values: ids, lists, numbers, instants, durations. Only the
// form is checked here; the rules (which scopes exist, an expiry in the future, a limit's
// range, a grace's length) belong to the services, which check them before any database is
// opened.
import { isUuid } from '../schemas/common.ts'
import { checkGrace, checkRateLimit } from '../services/api-key-admin.ts'
import { UsageError } from './context.ts'

/** An id given on the command line; `what` names the command, `kind` what it needs. */
export function requireId (value: string | undefined, what: string, kind = 'a key id (a GUID, as keys list shows)'): string {
  if (!isUuid(value)) {
    throw new UsageError(`${what} needs ${kind}${value === undefined ? '' : `, got ${value}`}`)
  }
  return value
}

/** A comma-separated list, blanks and repeats dropped. */
export function commaList (value: string): string[] {
  return [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))]
}

/** A whole number of requests per window, as typed. */
export function parseRateLimit (value: string): number {
  return checkRateLimit(/^\d+$/.test(value) ? Number(value) : Number.NaN, value)
}

// A date (midnight UTC) or a date-time with Z or an offset: a time without a zone would depend
// on the machine's time zone.
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i

/** An instant written as an ISO 8601 date or date-time with an offset; `option` names it in the refusal. */
export function parseInstant (value: string, option: string): Date {
  const match = ISO_TIMESTAMP.exec(value)
  const date = new Date(match && !value.includes('T') ? `${value}T00:00:00Z` : value)
  // Date accepts 2026-02-30 as 2026-03-02: the calendar day must survive the round trip.
  const calendarDay = match && new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))).toISOString().slice(0, 10)
  if (!match || Number.isNaN(date.getTime()) || calendarDay !== `${match[1]}-${match[2]}-${match[3]}`) {
    throw new UsageError(`${option} must be an ISO 8601 date or date-time with a UTC offset (2027-01-31 or 2027-01-31T12:00:00Z), got ${value}`)
  }
  return date
}

const DURATION = /^(\d{1,9})(s|m|h|d)$/
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/**
 * A roll's grace in milliseconds: `0`, or a whole number of seconds, minutes, hours or days
 * (`90s`, `30m`, `24h`, `7d`); `option` names it in the refusal. At most 7 days.
 */
export function parseGrace (value: string, option = '--grace'): number {
  if (value === '0') return 0
  const match = DURATION.exec(value)
  if (!match) throw new UsageError(`${option} must be 0 or a whole number with a unit s, m, h or d (90s, 30m, 24h, 7d), got ${value}`)
  return checkGrace(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS], value)
}
