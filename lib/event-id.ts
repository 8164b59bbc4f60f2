// The wire form of a change event's id, which is also the changes feed's cursor and a
// webhook's `webhook-id`: its position in the feed, behind a prefix that keeps it opaque.
const PREFIX = 'evt_'
const DIGITS = /^evt_(0|[1-9]\d{0,15})$/

export function eventIdOf (position: number): string {
  return `${PREFIX}${position}`
}

/** The position an event id names; null when the text is not one the service issues. */
export function positionOfEventId (id: string): number | null {
  const match = DIGITS.exec(id)
  if (match === null) return null
  const position = Number(match[1])
  return Number.isSafeInteger(position) ? position : null
}
