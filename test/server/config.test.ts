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

t.test('webhook settings: the defaults of the contract, and a lease longer than an attempt', async (t) => {
  const config = loadConfig({})
  t.equal(config.WEBHOOK_RETRY_SCHEDULE, '5,300,1800,7200,18000,36000,36000', '5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h')
  t.equal(config.WEBHOOK_TIMEOUT_MS, 10000)
  t.equal(config.WEBHOOK_DISABLE_AFTER_MS, 3 * 24 * 3600 * 1000)
  t.equal(config.WEBHOOK_ALLOW_HTTP, false)
  t.throws(() => loadConfig({ WEBHOOK_LEASE_MS: '5000', WEBHOOK_TIMEOUT_MS: '5000' }), { message: /WEBHOOK_LEASE_MS \(5000\) must be above WEBHOOK_TIMEOUT_MS/ })
  t.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5,soon' }), { message: /WEBHOOK_RETRY_SCHEDULE/ })
})

t.test('the API reference\'s title and contact: a default title, no contact, and values that must be what they say', async (t) => {
  const config = loadConfig({})
  t.equal(config.API_TITLE, 'Storefront External API')
  t.equal(config.API_CONTACT_EMAIL, undefined)
  t.equal(config.API_CONTACT_URL, undefined)
  t.match(loadConfig({ API_TITLE: 'Acme', API_CONTACT_EMAIL: 'api@acme.example', API_CONTACT_URL: 'https://acme.example/partners' }), { API_TITLE: 'Acme', API_CONTACT_EMAIL: 'api@acme.example', API_CONTACT_URL: 'https://acme.example/partners' })
  for (const email of ['api', 'api@acme', 'a b@acme.example', 'api@@acme.example', '<api@acme.example>']) {
    t.throws(() => loadConfig({ API_CONTACT_EMAIL: email }), { message: `invalid configuration: API_CONTACT_EMAIL (${email}) is not an email address such as integrations@shop.example` }, email)
  }
  for (const url of ['acme.example', 'ftp://acme.example', 'javascript:alert(1)', 'https://', 'https://acme.example/a b']) {
    t.throws(() => loadConfig({ API_CONTACT_URL: url }), { message: `invalid configuration: API_CONTACT_URL (${url}) is not an absolute http:// or https:// URL` }, url)
  }
  t.throws(() => loadConfig({ API_TITLE: 'x'.repeat(201) }), { message: /API_TITLE/ }, 'a title has a bound')
})

t.test('DB_POOL_SIZE sizes the pool of storefront serve', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  const { url } = await createTestDatabase(t)
  const server = await startServer(root, { DATABASE_URL: url!, DB_POOL_SIZE: '3', DB_STATEMENT_TIMEOUT_MS: '2500' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const metrics = await (await fetch(`${server.base}/metrics`)).text()
  t.match(metrics, /storefront_db_pool_connections\{state="max"\} 3\b/, 'the pool holds at most 3 connections')
})

t.test('KEY_CACHE_TTL_MS is at most 5 s, so a revoked key stops everywhere within the 5 s promised', async (t) => {
  t.equal(loadConfig({}).KEY_CACHE_TTL_MS, 2000, 'the default')
  t.equal(loadConfig({ KEY_CACHE_TTL_MS: '5000' }).KEY_CACHE_TTL_MS, 5000, '5 s is allowed')
  t.equal(loadConfig({ KEY_CACHE_TTL_MS: '0' }).KEY_CACHE_TTL_MS, 0, '0: every request looks its key up')
  t.throws(() => loadConfig({ KEY_CACHE_TTL_MS: '5001' }), { message: 'invalid configuration: KEY_CACHE_TTL_MS must be <= 5000' }, 'longer is refused at start')
  t.throws(() => loadConfig({ KEY_CACHE_TTL_MS: '-1' }), { message: /KEY_CACHE_TTL_MS must be >= 0/ })
})
