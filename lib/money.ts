// Money and pricing: amounts are integer cents in memory, numeric(12,2) in the database,
// and JSON numbers with at most two decimals on the wire. Nothing here uses binary floats
// for arithmetic.

export type Cents = number

export interface Discount {
  type: 'percentage' | 'amount'
  /** Percent for `percentage`, currency units for `amount`, exact to two decimals. */
  value: string | number
  startsAt: Date | string | null
  endsAt: Date | string | null
}

const DECIMAL = /^(-)?(\d+)(?:\.(\d{1,2}))?$/

/** Parses a decimal amount (a numeric column's text, or a JSON number with at most 2 decimals). */
export function toCents (amount: string | number): Cents {
  const text = typeof amount === 'number' ? numberText(amount) : amount.trim()
  const match = DECIMAL.exec(text)
  if (!match) throw new RangeError(`not an amount with at most two decimals: ${text}`)
  const [, sign, whole, fraction = ''] = match
  const cents = Number(whole) * 100 + Number(fraction.padEnd(2, '0'))
  return sign ? -cents : cents
}

// A JSON number such as 19.99 prints as "19.99"; 1e21 and similar are not amounts.
function numberText (n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`not a finite amount: ${n}`)
  return String(n)
}

/** Whether a JSON number is an amount with at most two decimals (what import accepts). */
export function isAmount (n: number): boolean {
  return Number.isFinite(n) && DECIMAL.test(String(n))
}

/** Cents as the JSON number integrators see: 5997 → 59.97 (the nearest double, printed exactly). */
export function toAmount (cents: Cents): number {
  return cents / 100
}

/** Cents as numeric(12,2) text for the database. */
export function toDecimalText (cents: Cents): string {
  const sign = cents < 0 ? '-' : ''
  const abs = Math.abs(cents)
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`
}

function isActive (discount: Discount, now: Date): boolean {
  const starts = discount.startsAt === null ? null : new Date(discount.startsAt)
  const ends = discount.endsAt === null ? null : new Date(discount.endsAt)
  return (starts === null || starts <= now) && (ends === null || now < ends)
}

/**
 * The selling price: the price after the discount when it is active at `now`, rounded
 * half-up to cents, never below 0 nor above the price.
 */
export function sellPriceCents (priceCents: Cents, discount: Discount | null, now: Date): Cents {
  if (discount === null || !isActive(discount, now)) return priceCents
  const valueCents = toCents(discount.value)
  let result: Cents
  if (discount.type === 'percentage') {
    // price × (1 − value/100) with value in hundredths of a percent; BigInt keeps it exact.
    const keep = 10000n - BigInt(valueCents)
    const numerator = BigInt(priceCents) * keep
    result = Number((numerator * 2n + 10000n) / 20000n)
  } else {
    result = priceCents - valueCents
  }
  return Math.min(priceCents, Math.max(0, result))
}

/** The next instant at which `discount` starts or ends after `now`, if any: when a cached price goes stale. */
export function nextPriceChange (discount: Discount | null, now: Date): Date | null {
  if (discount === null) return null
  const times = [discount.startsAt, discount.endsAt]
    .filter((t): t is Date | string => t !== null)
    .map((t) => new Date(t))
    .filter((t) => t > now)
  if (times.length === 0) return null
  return new Date(Math.min(...times.map((t) => t.getTime())))
}

/** A line total: a whole quantity of a price, exact while it fits numeric(12,2) (callers cap it there). */
export function multiply (cents: Cents, quantity: number): Cents {
  return cents * quantity
}
