// Behind PgBouncer as an operator deploys it: the `storefront` command in a child process.
// `migrate` without DATABASE_DIRECT_URL exits 2 with one line; `serve` pointed at the pooler without
// DATABASE_POOLER=transaction exits with one line naming the setting; with the
// settings, `serve` migrates a fresh database through the direct URL and answers.
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { runStorefront } from '../cli/spawn.ts'
import { startServer } from '../server-process.ts'
import { startTopology } from '../topology.ts'

t.setTimeout(180_000)
const topology = await startTopology(t, { pooler: true, poolSize: 4 })
const root = fileURLToPath(new URL('../..', import.meta.url))

const storefront = (args: string[], env: Record<string, string>) => runStorefront(env, args)

if (topology !== null) {
  t.test('storefront migrate behind the pooler without DATABASE_DIRECT_URL exits 2 with one line', async (t) => {
    const name = await topology.createDatabase(t)
    const result = await storefront(['migrate'], { DATABASE_URL: topology.poolerUrl(name), DATABASE_POOLER: 'transaction' })
    t.equal(result.code, 2)
    t.equal(result.stderr.trim(), 'storefront: migrate needs DATABASE_DIRECT_URL (a session connection to the primary) when DATABASE_POOLER=transaction')
    const migrated = await storefront(['migrate'], { DATABASE_URL: topology.poolerUrl(name), DATABASE_POOLER: 'transaction', DATABASE_DIRECT_URL: topology.primaryUrl(name) })
    t.equal(migrated.code, 0, `with it, migrate succeeds ${migrated.stderr}`)
    t.match(migrated.stdout, /migrations applied/)
  })

  t.test('storefront serve pointed at the pooler without DATABASE_POOLER=transaction stops with one line', async (t) => {
    const name = await topology.createDatabase(t)
    const result = await storefront(['serve'], { DATABASE_URL: topology.poolerUrl(name), PORT: '0' })
    t.not(result.code, 0)
    const lines = result.stderr.trim().split('\n')
    t.equal(lines.length, 1, `one line: ${result.stderr}`)
    t.match(lines[0], /^storefront: the database at [^ ]+ \(primary\) is behind a transaction pooler \(it refused the start-up parameter jit\): set DATABASE_POOLER=transaction/)
  })

  t.test('serve behind the pooler migrates a fresh database through the direct URL (MIGRATE_ON_START) and is ready', async (t) => {
    const name = await topology.createDatabase(t)
    const server = await startServer(root, {
      DATABASE_URL: topology.poolerUrl(name),
      DATABASE_POOLER: 'transaction',
      DATABASE_DIRECT_URL: topology.primaryUrl(name),
      MIGRATE_ON_START: 'true'
    })
    t.teardown(async () => {
      server.child.kill('SIGTERM')
      await server.exited
    })
    const ready = await fetch(`${server.base}/readyz`)
    t.equal(ready.status, 200, server.output())
  })
}
