// The command line's text turned into values: a roll's grace.
import t from 'tap'
import { UsageError } from '../../cli/context.ts'
import { parseGrace } from '../../cli/input.ts'
import { ApiError } from '../../errors.ts'
import { checkGrace, MAX_GRACE_MS } from '../../services/api-key-admin.ts'

function thrown (fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

t.test('a grace: 0, or a whole number of seconds, minutes, hours or days up to 7 days', async (t) => {
  const cases: Array<[string, number]> = [
    ['0', 0], ['0s', 0], ['0d', 0], ['1s', SECOND], ['90s', 90 * SECOND], ['30m', 30 * MINUTE], ['24h', DAY],
    ['36h', 36 * HOUR], ['7d', 7 * DAY], ['168h', 7 * DAY], ['604800s', 7 * DAY], ['007d', 7 * DAY]
  ]
  for (const [text, ms] of cases) t.equal(parseGrace(text), ms, text)
  t.equal(MAX_GRACE_MS, 7 * DAY)
})

t.test('a grace past 7 days is refused by the rule, with what was typed', async (t) => {
  for (const text of ['8d', '169h', '10081m', '604801s', '999999999d']) {
    t.throws(() => parseGrace(text), { code: 'validation_failed', message: `the grace must be from 0 to 7 days (7d), got ${text}` }, text)
    const err = thrown(() => parseGrace(text))
    t.ok(err instanceof ApiError && err.statusCode === 400, `${text}: a 400, so the command exits 2`)
  }
})

t.test('a grace not in the form is a usage error naming the option', async (t) => {
  for (const text of ['', 'abc', '24', '1.5h', '-1h', '1w', '24 h', ' 24h', '1H', '1h30m', 'P1D', '1e3s', '0x10s', '1234567890s']) {
    const err = thrown(() => parseGrace(text))
    t.ok(err instanceof UsageError, `${JSON.stringify(text)}: a usage error (exit code 2)`)
    t.equal((err as Error).message, `--grace must be 0 or a whole number with a unit s, m, h or d (90s, 30m, 24h, 7d), got ${text}`)
  }
  t.throws(() => parseGrace('x', '--after'), { message: /^--after must be/ }, 'the option named as given')
})

t.test('the service checks the grace itself: whole milliseconds from 0 to 7 days', async (t) => {
  t.equal(checkGrace(0), 0)
  t.equal(checkGrace(MAX_GRACE_MS), MAX_GRACE_MS)
  for (const ms of [-1, 0.5, MAX_GRACE_MS + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
    t.throws(() => checkGrace(ms), { code: 'validation_failed', message: `the grace must be from 0 to 7 days (7d), got ${ms} ms` }, String(ms))
  }
})
