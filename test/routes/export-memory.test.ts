// A 100,000-product export (about 80 MB) read by a client slower than the server: the server
// sends at the client's pace, so its memory stays flat whatever the size of the catalogue,
// and the database holds one transaction that waits between batches, not a result. Measured
// as the live heap and buffers after full collections, sampled while the client reads.
// PostgreSQL only: on PGlite an export is spooled to a file first (export-stream.test.ts).
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { seedPlainProducts, SocketExport } from '../export.ts'
import { authHeaders, buildTestApp, createTestDatabase, makeKey, sleep, UNLIMITED, usingPostgres } from '../helper.ts'

const PRODUCTS = 100_000
const MB = 2 ** 20
/** The client's pace: about 10 s for the whole export, several times slower than the server sends. */
const BYTES_PER_SECOND = 8 * MB
/** What the server may hold beyond its state before the export, whatever the catalogue's size. */
const FLAT_MB = 12

t.setTimeout(240_000)

if (!usingPostgres) {
  t.pass('needs TEST_DATABASE_URL', { skip: 'on PGlite an export is read into a temporary file first; PostgreSQL streams it from a cursor' })
} else {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  /**
   * What the process holds alive: the heap after a full collection, plus buffers outside it.
   * V8 frees the memory of dead buffers on a background thread after a collection, and the
   * count of buffers drops only then: read at once, it still held up to 25 MB of the socket
   * reads' dead buffers. The next collection waits for that sweep, so the second count is
   * what is alive.
   */
  const live = async () => {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    const { heapUsed, arrayBuffers } = process.memoryUsage()
    return heapUsed + arrayBuffers
  }

  const { database } = await createTestDatabase(t)
  const seeding = performance.now()
  await seedPlainProducts(database, PRODUCTS, { searchable: false })
  t.comment(`${PRODUCTS} products written in ${Math.round(performance.now() - seeding)} ms`)
  const app = await buildTestApp(t, { database, env: UNLIMITED, contract: false })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { key } = await makeKey(app)
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/external/v1/products/export`

  t.test('memory stays flat while a slow client reads the whole catalogue', async (t) => {
    // A first export warms what every request allocates once (statements, serializers).
    await (await SocketExport.open(`${url}?sku=Bulk-1`, authHeaders(key))).finish()
    const baseline = await live()
    const reader = await SocketExport.open(url, authHeaders(key))
    t.equal(reader.status, 200)
    const samples: number[] = []
    let waiting = 0
    const sampling = (async () => {
      while (reader.end === undefined && await Promise.race([reader.outcome.then(() => false), sleep(500).then(() => true)])) {
        samples.push(await live() - baseline)
        const [row] = await execute<{ waiting: number }>(database.db, sql`select count(*)::int as waiting from pg_stat_activity
          where datname = current_database() and state = 'idle in transaction' and query like 'fetch%'`)
        waiting = Math.max(waiting, row!.waiting)
      }
    })()
    const began = performance.now()
    t.equal(await reader.finish({ bytesPerSecond: BYTES_PER_SECOND, piece: 256 * 1024 }), 'complete')
    await sampling
    const seconds = (performance.now() - began) / 1000
    t.equal(reader.end?.count, PRODUCTS, `${PRODUCTS} products, ${(reader.received / MB).toFixed(1)} MB in ${seconds.toFixed(1)} s`)
    t.ok(samples.length >= 5, `${samples.length} samples`)
    const peak = Math.max(...samples)
    const shown = { samples: samples.map((s) => +(s / MB).toFixed(1)) }
    t.ok(peak < FLAT_MB * MB, `the live heap and buffers grew at most ${(peak / MB).toFixed(1)} MB (bound ${FLAT_MB} MB) while ${(reader.received / MB).toFixed(0)} MB went out`, shown)
    t.equal(waiting, 1, 'meanwhile the database held one transaction waiting for the client between batches (a cursor, not a result)')
  })
}
