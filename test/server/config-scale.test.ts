// The settings of running at scale: defaults, accepted and refused values.
import t from 'tap'
import { loadConfig, replicaUrls } from '../../config.ts'
import { connectionOptions } from '../../db/client.ts'

t.test('defaults: no pooler, no prepared statements through one, no direct URL, no replicas', async (t) => {
  const config = loadConfig({})
  t.equal(config.DATABASE_POOLER, 'none')
  t.equal(config.DATABASE_POOLER_PREPARED, false)
  t.equal(config.DATABASE_DIRECT_URL, undefined)
  t.same(replicaUrls(config.DATABASE_REPLICA_URLS), [])
})

t.test('replica URLs are a comma-separated list', async (t) => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://app@pooler:6432/store',
    DATABASE_POOLER: 'transaction',
    DATABASE_DIRECT_URL: 'postgres://app@primary:5432/store',
    DATABASE_REPLICA_URLS: 'postgres://app@replica1:5432/store, postgresql://app@replica2:5432/store'
  })
  t.same(connectionOptions(config), {
    url: 'postgres://app@pooler:6432/store',
    dataDir: './data',
    pooler: 'transaction',
    poolerPrepared: false,
    directUrl: 'postgres://app@primary:5432/store',
    replicaUrls: ['postgres://app@replica1:5432/store', 'postgresql://app@replica2:5432/store'],
    replicaSettleMs: 750
  })
})

t.test('refused values', async (t) => {
  t.throws(() => loadConfig({ DATABASE_POOLER: 'session' }), { message: /^invalid configuration: DATABASE_POOLER/ }, 'only none and transaction')
  t.throws(() => loadConfig({ DATABASE_DIRECT_URL: 'mysql://x/y' }), { message: /^invalid configuration: DATABASE_DIRECT_URL/ })
  t.throws(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgres://a/b,,' }), { message: /^invalid configuration: DATABASE_REPLICA_URLS/ })
  t.throws(() => loadConfig({ DATABASE_POOLER_PREPARED: 'maybe' }), { message: /^invalid configuration: DATABASE_POOLER_PREPARED/ })
})
