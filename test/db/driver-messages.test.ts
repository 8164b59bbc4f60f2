// The driver's reading of the server's messages as patched in patches/ (postgres.js 3.4.9): a
// message that spans two or more reads of the socket is joined from its own bytes alone, and
// the rest of the read is parsed where it is. Unpatched, the whole of the next read was copied
// with it: nearly every 64 kB of a large result (an export) was copied once more, which cost
// the app a sixth of its CPU over a products export and fed the garbage collector.
//
// The tests hand the driver a socket whose reads they cut where they choose: anywhere in a
// message's header, in its middle, a message over many reads, many messages in one read.
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import postgres from 'postgres'
import t from 'tap'
import { createTestDatabase, usingPostgres } from '../helper.ts'

const needs = usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL' }

/** A driver whose socket's reads are cut into pieces of the sizes `cut` gives, in turn; `reads` gets each piece. */
function driverWithReads (url: string, cut: () => number, reads: Buffer[] = []) {
  const target = new URL(url)
  return postgres(url, {
    max: 1,
    onnotice: () => {},
    // `socket` (documented, missing from the driver's types) hands the driver its socket.
    socket: async () => {
      const socket: Socket = connect(Number(target.port || 5432), target.hostname)
      await once(socket, 'connect')
      const emit = socket.emit.bind(socket)
      socket.emit = (event: string | symbol, ...args: unknown[]) => {
        if (event !== 'data') return emit(event, ...args)
        const chunk = args[0] as Buffer
        for (let at = 0; at < chunk.length;) {
          const piece = chunk.subarray(at, at + Math.max(1, cut()))
          at += piece.length
          reads.push(piece)
          emit('data', piece)
        }
        return true
      }
      return socket
    }
  } as postgres.Options<Record<string, postgres.PostgresType>>)
}

/** Rows of every size from a few bytes to past 64 kB, each of one repeated letter, so a wrong cut shows. */
const VARIED = `select i, repeat(chr(65 + i % 26), case when i % 50 = 0 then 70000 + i else (i * 7919) % 3000 end) as v
  from generate_series(1, 600) i order by i`

function expectedValue (i: number): string {
  return String.fromCharCode(65 + i % 26).repeat(i % 50 === 0 ? 70000 + i : (i * 7919) % 3000)
}

t.test('every row is read exactly, however the socket cuts the messages', needs, async (t) => {
  const { url } = await createTestDatabase(t)
  let seed = 7
  const random = () => { seed = (seed * 48271) % 2147483647; return seed }
  const cuts: Array<[string, () => number]> = [
    ['one byte a read', () => 1],
    ['three bytes a read (every header cut)', () => 3],
    ['4,099 bytes a read', () => 4099],
    ['64 kB a read', () => 65536],
    ['reads of 1 to 20,000 bytes at random', () => 1 + random() % 20000]
  ]
  for (const [name, cut] of cuts) {
    const sql = driverWithReads(url!, cut)
    const rows = await sql.unsafe<Array<{ i: number, v: string }>>(VARIED)
    t.equal(rows.length, 600, `${name}: every row`)
    t.ok(rows.every((row) => row.v === expectedValue(row.i)), `${name}: every value exact`)
    const raw = await sql.unsafe(VARIED).raw() as unknown as Array<[Buffer, Buffer]>
    t.ok(raw.every(([i, v]) => v.toString('latin1') === expectedValue(Number(i.toString('latin1')))), `${name}: every raw value exact`)
    t.same(await sql`select 2 as two`, [{ two: 2 }], `${name}: the connection reads on after them`)
    await sql.end({ timeout: 1 })
  }
})

t.test('a message that spans reads is joined from its own bytes; the rest of each read is not copied', needs, async (t) => {
  const { url } = await createTestDatabase(t)
  const reads: Buffer[] = []
  const sql = driverWithReads(url!, () => 65536, reads)
  t.teardown(() => sql.end({ timeout: 1 }))
  // Values of 5,000 bytes and more: a buffer joined for one of them is its own, not a slice of a shared pool.
  const rows = await sql.unsafe('select repeat(\'x\', 5000 + i % 97) as v from generate_series(1, 400) i order by i').raw() as unknown as Array<[Buffer]>
  t.equal(rows.length, 400)
  const readBuffers = new Set(reads.map((read) => read.buffer))
  // A one-column DataRow is its type (1 byte), length (4), column count (2), value length (4), value.
  const joined = rows.filter(([v]) => !readBuffers.has(v.buffer) && v.buffer.byteLength === v.length + 11)
  const elsewhere = rows.filter(([v]) => !readBuffers.has(v.buffer) && v.buffer.byteLength !== v.length + 11)
  t.ok(joined.length > 0, `rows that spanned two reads are in buffers of their own message (${joined.length})`)
  t.equal(elsewhere.length, 0, 'every other row is where its read put it, not in a copy')
})
