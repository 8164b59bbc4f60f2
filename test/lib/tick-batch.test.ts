import t from 'tap'
import { TickBatch } from '../../lib/tick-batch.ts'

/** A batch over squares that records every call's keys. */
function squares (maxKeys: number, fail?: (keys: number[]) => boolean) {
  const calls: number[][] = []
  const batch = new TickBatch<number, number>(async (keys) => {
    calls.push(keys)
    if (fail?.(keys)) throw new Error(`failed on ${keys.join(',')}`)
    return new Map(keys.filter((k) => k >= 0).map((k) => [k, k * k]))
  }, maxKeys)
  return { batch, calls }
}

t.test('keys asked for in one round are loaded by one call, each answered its own value', async (t) => {
  const { batch, calls } = squares(10)
  t.strictSame(await Promise.all([batch.load(2), batch.load(3), batch.load(-1), batch.load(4)]), [4, 9, undefined, 16])
  t.strictSame(calls, [[2, 3, -1, 4]], 'one call; a key the load did not find answers undefined')
})

t.test('a key asked for twice in a round is loaded once, and both get it', async (t) => {
  const { batch, calls } = squares(10)
  t.strictSame(await Promise.all([batch.load(5), batch.load(5), batch.load(6)]), [25, 25, 36])
  t.strictSame(calls, [[5, 6]])
})

t.test('a later round is a call of its own', async (t) => {
  const { batch, calls } = squares(10)
  t.equal(await batch.load(1), 1)
  t.equal(await batch.load(2), 4)
  t.strictSame(calls, [[1], [2]])
})

t.test('keys asked for in callbacks of the same round of I/O share a call', async (t) => {
  const { batch, calls } = squares(10)
  // Two timers due together run in one round of the event loop, before its setImmediate.
  const results = await Promise.all([1, 2, 3].map((k) => new Promise<number | undefined>((resolve) => {
    setTimeout(() => { resolve(batch.load(k)) }, 0)
  })))
  t.strictSame(results, [1, 4, 9])
  t.ok(calls.length < 3, `fewer calls than keys (${JSON.stringify(calls)})`)
})

t.test('more keys than a call takes are split into calls of at most that many', async (t) => {
  const { batch, calls } = squares(3)
  const keys = [1, 2, 3, 4, 5, 6, 7]
  t.strictSame(await Promise.all(keys.map((k) => batch.load(k))), keys.map((k) => k * k))
  t.strictSame(calls, [[1, 2, 3], [4, 5, 6], [7]])
})

t.test('a failed call fails its own keys only', async (t) => {
  const { batch } = squares(2, (keys) => keys.includes(3))
  const results = await Promise.allSettled([1, 2, 3, 4].map((k) => batch.load(k)))
  t.strictSame(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'rejected'])
  t.match((results[2] as PromiseRejectedResult).reason, { message: 'failed on 3,4' })
  t.equal(await batch.load(3).catch(() => 'failed again'), 'failed again', 'and the next round tries again')
})

t.test('a load that throws before returning a promise fails its keys, no more', async (t) => {
  let calls = 0
  const batch = new TickBatch<number, number>((keys) => {
    calls++
    if (calls === 1) throw new Error(`sync failure on ${keys.join(',')}`)
    return Promise.resolve(new Map(keys.map((k) => [k, k])))
  }, 10)
  await t.rejects(batch.load(1), { message: 'sync failure on 1' })
  t.equal(await batch.load(2), 2, 'the batch goes on')
})
