// How the documentation writes configured values: exact units, plurals, lists.
import t from 'tap'
import { count, days, delays, duration, hours, listed, roughly } from '../../schemas/wording.ts'

t.test('durations in the largest exact unit up to hours', async (t) => {
  t.equal(duration(24 * 3_600_000), '24 hours')
  t.equal(duration(3_600_000), '1 hour')
  t.equal(duration(90 * 60_000), '90 minutes')
  t.equal(duration(10_000), '10 seconds')
  t.equal(duration(1000), '1 second')
  t.equal(duration(1500), '1.5 seconds')
  t.equal(duration(250), '250 ms')
  t.equal(hours(48), '48 hours')
  t.equal(hours(1), '1 hour')
  t.equal(days(30), '30 days')
  t.equal(days(1), '1 day')
})

t.test('retry delays in short units, as a sentence', async (t) => {
  t.equal(delays([5000, 300_000, 1_800_000, 7_200_000]), '5 s, 5 min, 30 min and 2 h')
  t.equal(delays([500, 90_000, 5_400_000]), '500 ms, 1.5 min and 1.5 h')
  t.equal(delays([5000]), '5 s')
  t.equal(listed([]), '')
})

t.test('counts and rough times', async (t) => {
  t.equal(count(100_000), '100,000')
  t.equal(count(2048), '2,048')
  t.equal(roughly(800), 'a second')
  t.equal(roughly(4000), '4 seconds')
})
