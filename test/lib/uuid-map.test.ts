import t from 'tap'
import { UuidMap } from '../../lib/uuid-map.ts'

t.test('gets what was set, comparing ids as uuids, and grows', async (t) => {
  const map = new UuidMap(4)
  const oracle = new Map<string, number>()
  for (let i = 0; i < 20_000; i++) {
    const id = crypto.randomUUID()
    map.set(i % 2 ? id.toUpperCase() : id, i)
    oracle.set(id, i)
  }
  t.equal(map.size, 20_000)
  let wrong = 0
  for (const [id, value] of oracle) if (map.get(id) !== value || map.get(id.toUpperCase()) !== value) wrong++
  t.equal(wrong, 0, 'every id found, in either case')
  t.equal(map.get(crypto.randomUUID()), undefined, 'an unknown id')

  const id = 'C0FFEE00-0000-4000-8000-000000000001'
  map.set(id, 7)
  map.set(id.toLowerCase(), 8)
  t.equal(map.get(id), 8, 'the same id in another case is the same key')
  t.equal(map.get('c0ffee0000004000800000000000000 1'.replace(' ', '')), 8, 'dashes do not matter')
  t.equal(map.size, 20_001)
})

t.test('ids that differ only in their last or first bits, as sequential ids do', async (t) => {
  const map = new UuidMap()
  const ids = Array.from({ length: 5000 }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`)
  ids.forEach((id, i) => map.set(id, i * 3))
  t.strictSame(ids.map((id) => map.get(id)), ids.map((_, i) => i * 3))
  const high = Array.from({ length: 5000 }, (_, i) => `${i.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`)
  high.forEach((id, i) => map.set(id, i))
  t.strictSame(high.map((id) => map.get(id)), high.map((_, i) => i))
})

t.test('refuses what is not a uuid, and negative values', async (t) => {
  const map = new UuidMap()
  for (const bad of ['', 'not-a-uuid', 'c0ffee00-0000-4000-8000-00000000000g', 'c0ffee00-0000-4000-8000-0000000000011', 'c0ffee00-0000-4000-8000-00000000001']) {
    t.throws(() => map.get(bad), TypeError, `${JSON.stringify(bad)}`)
  }
  t.throws(() => map.set(crypto.randomUUID(), -1), RangeError)
  t.throws(() => map.set(crypto.randomUUID(), Number.NaN), RangeError)
})
