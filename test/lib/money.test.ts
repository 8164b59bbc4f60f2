import fc from 'fast-check'
import t from 'tap'
import { isAmount, multiply, nextPriceChange, sellPriceCents, toAmount, toCents, toDecimalText, type Discount } from '../../lib/money.ts'

// numeric(12,2) holds at most 10 digits before the point.
const MAX_CENTS = 999_999_999_999
const cents = fc.integer({ min: -MAX_CENTS, max: MAX_CENTS })
const priceCents = fc.integer({ min: 0, max: MAX_CENTS })
const percentHundredths = fc.integer({ min: 0, max: 10_000 })
const NOW = new Date('2026-03-01T12:00:00Z')

const always = (type: Discount['type'], value: string | number): Discount => ({ type, value, startsAt: null, endsAt: null })

// Half-up rounding of price × (10000 − v) / 10000, written independently of lib/money.ts.
function referencePercentage (price: number, hundredths: number): number {
  const numerator = BigInt(price) * BigInt(10_000 - hundredths)
  const quotient = numerator / 10_000n
  const remainder = numerator % 10_000n
  return Number(remainder * 2n >= 10_000n ? quotient + 1n : quotient)
}

// Decimal text of an integer number of cents, by string slicing rather than arithmetic.
function referenceText (c: number): string {
  const digits = String(Math.abs(c)).padStart(3, '0')
  return `${c < 0 ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`
}

t.test('toCents and toAmount round-trip every cents value', async (t) => {
  fc.assert(fc.property(cents, (c) => toCents(toAmount(c)) === c))
  fc.assert(fc.property(cents, (c) => toCents(toDecimalText(c)) === c))
  t.equal(toCents('19.99'), 1999)
  t.equal(toCents('0.1'), 10)
  t.equal(toCents(0.1), 10)
  t.equal(toCents(1234567.89), 123456789)
  t.equal(toCents(' 12 '), 1200)
  t.equal(toAmount(1999), 19.99)
  t.equal(toAmount(123456789), 1234567.89)
  t.equal(JSON.stringify(toAmount(10)), '0.1')
})

t.test('toAmount prints exactly the decimal amount', async (t) => {
  fc.assert(fc.property(cents, (c) => {
    const printed = JSON.stringify(toAmount(c))
    // The reference text with trailing zeros dropped: 19.90 → 19.9, 5.00 → 5.
    const expected = referenceText(c).replace(/\.?0+$/, '').replace(/^-?$/, '0').replace(/^-0$/, '0')
    return printed === expected
  }))
  t.pass('checked')
})

t.test('toCents rejects what is not an amount with at most two decimals', async (t) => {
  for (const bad of ['1.234', 'abc', '', '1e3', '1.', '.5', '--1']) t.throws(() => toCents(bad), RangeError, bad)
  for (const bad of [0.1 + 0.2, 1.005, Number.NaN, Number.POSITIVE_INFINITY, 1e21]) t.throws(() => toCents(bad), RangeError, String(bad))
  t.equal(isAmount(19.99), true)
  t.equal(isAmount(0.1 + 0.2), false)
  t.equal(isAmount(1e21), false)
})

t.test('toDecimalText is the numeric(12,2) text of the cents', async (t) => {
  fc.assert(fc.property(cents, (c) => toDecimalText(c) === referenceText(c)))
  t.equal(toDecimalText(0), '0.00')
  t.equal(toDecimalText(5), '0.05')
  t.equal(toDecimalText(-5), '-0.05')
  t.equal(toDecimalText(1999), '19.99')
  t.equal(toDecimalText(123456789), '1234567.89')
})

t.test('a percentage discount matches an exact BigInt reference, rounded half-up', async (t) => {
  fc.assert(fc.property(priceCents, percentHundredths, (price, v) =>
    sellPriceCents(price, always('percentage', toDecimalText(v)), NOW) === referencePercentage(price, v)))
  // The same through a JSON-number discount value.
  fc.assert(fc.property(priceCents, percentHundredths, (price, v) =>
    sellPriceCents(price, always('percentage', toAmount(v)), NOW) === referencePercentage(price, v)))
  t.equal(sellPriceCents(115, always('percentage', '50.00'), NOW), 58, '1.15 at 50% is 0.58')
  t.equal(sellPriceCents(1999, always('percentage', 10), NOW), 1799, '19.99 at 10% is 17.991 → 17.99')
  t.equal(sellPriceCents(1, always('percentage', 50), NOW), 1, '0.01 at 50% is 0.005 → 0.01')
  t.equal(sellPriceCents(3, always('percentage', 50), NOW), 2, '0.03 at 50% is 0.015 → 0.02')
  t.equal(sellPriceCents(1000, always('percentage', 100), NOW), 0)
  t.equal(sellPriceCents(1000, always('percentage', 0), NOW), 1000)
  t.equal(sellPriceCents(1000, always('percentage', 33.33), NOW), 667)
})

t.test('sellPrice is never below 0 nor above the price', async (t) => {
  const discount = fc.record({
    type: fc.constantFrom<Discount['type']>('percentage', 'amount'),
    value: fc.integer({ min: 0, max: 2 * MAX_CENTS }).map(toDecimalText),
    startsAt: fc.constant(null),
    endsAt: fc.constant(null)
  })
  fc.assert(fc.property(priceCents, discount, (price, d) => {
    const sell = sellPriceCents(price, d, NOW)
    return Number.isInteger(sell) && sell >= 0 && sell <= price
  }))
  t.equal(sellPriceCents(500, always('amount', '7.50'), NOW), 0, 'an amount larger than the price gives 0')
  t.equal(sellPriceCents(1999, always('amount', 5), NOW), 1499)
  t.equal(sellPriceCents(1000, always('percentage', 150), NOW), 0, 'over 100% never goes negative')
})

t.test('an amount discount subtracts exactly', async (t) => {
  fc.assert(fc.property(priceCents, priceCents, (price, value) =>
    sellPriceCents(price, always('amount', toDecimalText(value)), NOW) === Math.max(0, price - value)))
  t.pass('checked')
})

t.test('a discount applies only inside its window', async (t) => {
  const at = (iso: string) => new Date(iso)
  const d: Discount = { type: 'percentage', value: '50.00', startsAt: '2026-03-01T12:00:00Z', endsAt: '2026-03-02T00:00:00.000Z' }
  t.equal(sellPriceCents(1000, d, at('2026-03-01T11:59:59.999Z')), 1000, 'before it starts')
  t.equal(sellPriceCents(1000, d, at('2026-03-01T12:00:00Z')), 500, 'from its start')
  t.equal(sellPriceCents(1000, d, at('2026-03-01T23:59:59.999Z')), 500, 'until just before its end')
  t.equal(sellPriceCents(1000, d, at('2026-03-02T00:00:00Z')), 1000, 'not at its end')
  t.equal(sellPriceCents(1000, { ...d, startsAt: null }, at('2000-01-01T00:00:00Z')), 500, 'open start')
  t.equal(sellPriceCents(1000, { ...d, endsAt: null }, at('2100-01-01T00:00:00Z')), 500, 'open end')
  // Database JSON prints timestamps with an offset; those parse the same.
  t.equal(sellPriceCents(1000, { ...d, startsAt: '2026-03-01T13:00:00+01:00' }, at('2026-03-01T12:00:00Z')), 500)
  t.equal(sellPriceCents(1000, null, NOW), 1000)
})

t.test('nextPriceChange is the earliest future start or end', async (t) => {
  const d: Discount = { type: 'amount', value: 1, startsAt: '2026-03-01T13:00:00Z', endsAt: '2026-03-01T14:00:00Z' }
  t.same(nextPriceChange(d, NOW), new Date('2026-03-01T13:00:00Z'))
  t.same(nextPriceChange(d, new Date('2026-03-01T13:30:00Z')), new Date('2026-03-01T14:00:00Z'))
  t.equal(nextPriceChange(d, new Date('2026-03-01T14:00:00Z')), null)
  t.equal(nextPriceChange(null, NOW), null)
  t.equal(nextPriceChange(always('amount', 1), NOW), null)
})

t.test('multiply is exact for whole quantities', async (t) => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 99_999_999 }), fc.integer({ min: 1, max: 100_000 }), (c, q) =>
    BigInt(multiply(c, q)) === BigInt(c) * BigInt(q)))
  t.equal(multiply(1999, 3), 5997)
})
