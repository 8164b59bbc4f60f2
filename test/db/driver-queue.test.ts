// The driver's connection queues as patched in patches/ (postgres.js 3.4.9): a queue that never
// empties, such as the idle connections of a pool larger than its load, must not keep a slot
// for every connection it ever handed out. Unpatched, each query left one behind and every
// move of a connection between queues scanned them all: 8 bytes and a little more CPU a query,
// for as long as the server runs (8.6% of the app's CPU in the product-read benchmark).
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import t from 'tap'

interface Queue<T> { readonly length: number, push: (x: T) => T, shift: () => T | undefined, remove: (x: T) => T | null }
// Not among the package's exports: read from its file, as the driver itself imports it.
const { default: Queue } = await import(new URL('../../node_modules/postgres/src/queue.js', import.meta.url).href) as { default: <T>(initial?: T[]) => Queue<T> }

setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as () => void
const heapAfterCollecting = () => { collect(); return process.memoryUsage().heapUsed }

t.test('a queue keeps its order and its length across many turns, and removes what it holds', async (t) => {
  const queue = Queue<string>()
  for (const x of ['a', 'b', 'c', 'd']) queue.push(x)
  const seen: string[] = []
  for (let i = 0; i < 10_000; i++) seen.push(queue.push(queue.shift()!))
  t.same(seen.slice(0, 8), ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd'], 'first in, first out')
  t.same(seen.slice(-4), ['a', 'b', 'c', 'd'], 'still in order after 10,000 turns')
  t.equal(queue.length, 4)

  t.equal(queue.remove('c'), 'c', 'an item it holds is removed')
  t.equal(queue.remove('c'), null, 'one it no longer holds is not')
  const taken = queue.shift()
  t.equal(queue.remove(taken!), null, 'nor one it handed out')
  t.same([queue.shift(), queue.shift(), queue.shift()], ['b', 'd', undefined], 'the rest, in order, then nothing')
  t.equal(queue.length, 0)
})

t.test('a queue that never empties does not grow with its turns', async (t) => {
  const queue = Queue<object>()
  const items = [{}, {}, {}]
  for (const x of items) queue.push(x)
  const before = heapAfterCollecting()
  // A pool's idle connections: one taken, moved back, a million times, never all at once.
  for (let i = 0; i < 1_000_000; i++) {
    const x = queue.shift()!
    queue.remove(x)
    queue.push(x)
  }
  const grown = heapAfterCollecting() - before
  // Unpatched, the array kept a slot a turn: some 8 MB here.
  t.ok(grown < 2 * 2 ** 20, `the heap grew ${(grown / 2 ** 20).toFixed(1)} MB over a million turns`)
  t.equal(queue.length, 3)
})
