// Configuration reaches what it configures: a blank variable in the environment counts as
// unset, and the database settings reach the pool of a serving process.
import t from 'tap'
import { loadConfig } from '../../config.ts'
import { createTestDatabase, usingPostgres } from '../helper.ts'
import { startServer } from '../server-process.ts'

const root = new URL('../..', import.meta.url).pathname

t.test('a blank variable in the process environment counts as unset', async (t) => {
  const saved = process.env.PORT
  process.env.PORT = ''
  t.teardown(() => { if (saved === undefined) delete process.env.PORT; else process.env.PORT = saved })
  t.equal(loadConfig().PORT, 3000, 'PORT= falls back to the default')
  t.equal(loadConfig({ PORT: '' }).PORT, 3000, 'and so does a blank value passed in')
  t.throws(() => loadConfig({ PORT: 'abc' }), { message: /PORT/ }, 'a bad value still stops the start')
})

t.test('DB_POOL_SIZE sizes the pool of storefront serve', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  const { url } = await createTestDatabase(t)
  const server = await startServer(root, { DATABASE_URL: url!, DB_POOL_SIZE: '3', DB_STATEMENT_TIMEOUT_MS: '2500' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const metrics = await (await fetch(`${server.base}/metrics`)).text()
  t.match(metrics, /storefront_db_pool_connections\{state="max"\} 3\b/, 'the pool holds at most 3 connections')
})
