import t from 'tap'
import { RecentKeys } from '../../lib/recent-keys.ts'

t.test('a key asked for again answers when it was asked for before', async (t) => {
  const recent = new RecentKeys(1024)
  t.equal(recent.previous('product:a', 10), null, 'never asked for')
  t.equal(recent.previous('product:a', 25), 10)
  t.equal(recent.previous('product:a', 40), 25, 'the last time, not the first')
  t.equal(recent.previous('product:b', 50), null, 'another key is new')
  t.equal(recent.previous('product:a', 60), 40, 'and leaves the first remembered')
})

t.test('a key is forgotten once another lands in its slot', async (t) => {
  // One slot: every key shares it.
  const recent = new RecentKeys(1)
  t.equal(recent.previous('a', 1), null)
  t.equal(recent.previous('b', 2), null)
  t.equal(recent.previous('a', 3), null, 'b took its slot')
  t.equal(recent.previous('a', 4), 3)
})

t.test('keys that differ in one character are told apart', async (t) => {
  const recent = new RecentKeys(1 << 16)
  const keys = Array.from({ length: 2000 }, (_, i) => `list:[{},${i},${i * 25},null]`)
  t.same(keys.filter((k) => recent.previous(k, 1) !== null), [], 'none remembered on its first asking')
  // 2,000 keys in 65,536 slots: a few dozen share a slot with a later key and were forgotten.
  t.ok(keys.filter((k) => recent.previous(k, 2) === 1).length >= 1900, 'nearly all on their second')
})
