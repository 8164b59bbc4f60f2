// The database driver as patched in patches/ (postgres.js 3.4.9, see docs/architecture.md): a
// connection whose socket closes while a small write waits for its setImmediate must still
// connect again. Unpatched, the next connection's start-up message joins the stale buffer and
// is never sent: every later attempt ends in CONNECT_TIMEOUT, and the pool never recovers
// from a database outage (seen in test/server/outages.test.ts as retries answering 503 for good).
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import postgres from 'postgres'
import t from 'tap'
import { createTestDatabase, usingPostgres } from '../helper.ts'

t.test('a connection closed with a write pending connects again', usingPostgres ? {} : { skip: 'needs TEST_DATABASE_URL' }, async (t) => {
  const { url } = await createTestDatabase(t)
  const target = new URL(url!)
  const sockets: Socket[] = []
  // `socket` (documented, missing from the driver's types) hands the driver sockets the
  // test can reach, so it can close one at a chosen moment.
  const options = {
    max: 1,
    connect_timeout: 2,
    onnotice: () => {},
    socket: async () => {
      const socket = connect(Number(target.port || 5432), target.hostname)
      await once(socket, 'connect')
      sockets.push(socket)
      return socket
    }
  }
  const sql = postgres(url!, options)
  t.teardown(() => sql.end({ timeout: 1 }))

  t.same(await sql`select 1 as one`, [{ one: 1 }], 'the first connection answers')

  // The query's bytes now wait for the driver's setImmediate; the socket closes first.
  const interrupted = sql`select 2 as two`.catch((err: { code?: string }) => err.code)
  for (let i = 0; i < 5; i++) await null
  const first = sockets[0]!
  first.emit('close', false)
  first.destroy()
  t.equal(await interrupted, 'CONNECTION_CLOSED', 'the interrupted query is rejected')

  const started = performance.now()
  const again = await sql`select 3 as three`.catch((err: { code?: string }) => err.code)
  t.same(again, [{ three: 3 }], `the next query connects again and answers (${Math.round(performance.now() - started)} ms)`)
  t.equal(sockets.length, 2, 'on a new socket')
})
