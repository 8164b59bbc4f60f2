// `storefront migrate` and MIGRATE_ON_START on a real PostgreSQL: safe when several
// instances migrate one fresh database at once, a no-op the second time, and what a server
// started with MIGRATE_ON_START=true does on an empty database.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import postgres from 'postgres'
import t from 'tap'
import { createEmptyDatabase } from '../helper.ts'
import { startServer } from '../server-process.ts'

type T = Parameters<Parameters<typeof t.test>[0]>[0]

const ADMIN_URL = process.env.TEST_DATABASE_URL
const needsPostgres = ADMIN_URL ? {} : { skip: 'needs TEST_DATABASE_URL' }
const root = new URL('../..', import.meta.url).pathname
const run = promisify(execFile)

// Five processes start through tsx here, which takes a while on a busy machine.
t.setTimeout(240_000)

const journal = JSON.parse(readFileSync(new URL('../../db/migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: Array<{ tag: string }> }
const TABLES = [
  'api_keys', 'brands', 'categories', 'combination_options', 'combinations', 'discounts', 'idempotency_keys',
  'order_items', 'orders', 'product_categories', 'products', 'store_settings', 'variant_options', 'variants'
]

/** A fresh, empty database, dropped at teardown; returns its URL and a client on it. */
async function freshDatabase (t: T) {
  const url = await createEmptyDatabase(t, 'sf_migrate', ADMIN_URL!)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(() => sql.end({ timeout: 5 }))
  return { url, sql }
}

async function migrate (url: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['bin/storefront.js', 'migrate', '--json'], {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: url, LOG_LEVEL: 'warn' },
      timeout: 60_000
    })
    return { code: 0, stdout, stderr }
  } catch (err) {
    const e = err as { code?: number, stdout?: string, stderr?: string }
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) }
  }
}

async function checkSchema (t: T, sql: postgres.Sql) {
  const [{ n }] = await sql<[{ n: number }]>`select count(*)::int as n from drizzle.__drizzle_migrations`
  t.equal(n, journal.entries.length, `the migrations table has one row per journal entry (${journal.entries.length})`)
  const present = await sql<Array<{ name: string }>>`
    select table_name as name from information_schema.tables where table_schema = 'public' order by 1`
  t.same(TABLES.filter((table) => !present.some((p) => p.name === table)), [], 'every table exists')
  const [ext] = await sql`select 1 from pg_extension where extname = 'pg_trgm'`
  t.ok(ext, 'pg_trgm is installed (the custom migration)')
  const sequences = await sql<Array<{ name: string }>>`select sequence_name as name from information_schema.sequences where sequence_schema = 'public'`
  t.ok(sequences.some((s) => s.name === 'order_number_seq'), 'the order number sequence exists')
}

t.test('three `storefront migrate` at once on a fresh database: all succeed, schema applied once', needsPostgres, async (t) => {
  const { url, sql } = await freshDatabase(t)
  const results = await Promise.all([migrate(url), migrate(url), migrate(url)])
  for (const [i, r] of results.entries()) {
    t.equal(r.code, 0, `migrate ${i + 1} exits 0${r.code === 0 ? '' : `:\n${r.stderr}`}`)
    t.same(JSON.parse(r.stdout), { migrated: true }, `migrate ${i + 1} prints one JSON document`)
  }
  await checkSchema(t, sql)
  const hashes = await sql<Array<{ hash: string }>>`select hash from drizzle.__drizzle_migrations`
  t.equal(new Set(hashes.map((h) => h.hash)).size, hashes.length, 'no migration recorded twice')

  const again = await migrate(url)
  t.equal(again.code, 0, 'a fourth run on the migrated database exits 0')
  await checkSchema(t, sql)
})

t.test('`storefront migrate` with a database it cannot reach fails with a message and exit 1', needsPostgres, async (t) => {
  const unreachable = new URL(ADMIN_URL!)
  unreachable.hostname = '127.0.0.1'
  unreachable.port = '9'
  const started = Date.now()
  const r = await migrate(unreachable.href)
  t.equal(r.code, 1, 'exit 1')
  t.match(r.stderr, /ECONNREFUSED|connect|reach/i, 'says why')
  t.notMatch(r.stderr, /^\s+at /m, 'no stack trace')
  t.ok(Date.now() - started < 30_000, 'gives up in bounded time')
})

t.test('MIGRATE_ON_START=true: `storefront serve` migrates a fresh database, then serves', needsPostgres, async (t) => {
  const { url, sql } = await freshDatabase(t)
  const server = await startServer(root, { DATABASE_URL: url, MIGRATE_ON_START: 'true' })
  t.teardown(() => { server.child.kill('SIGKILL') })
  const ready = await fetch(`${server.base}/readyz`)
  t.equal(ready.status, 200, '/readyz answers 200')
  await checkSchema(t, sql)
  const [{ n }] = await sql<[{ n: number }]>`select count(*)::int as n from api_keys`
  t.equal(n, 0, 'with DATABASE_URL no demo key is made')
  const [{ p }] = await sql<[{ p: number }]>`select count(*)::int as p from products`
  t.equal(p, 0, 'and no demo catalogue is loaded')

  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'SIGTERM: exits 0')
})

t.test('MIGRATE_ON_START=true on two servers starting at once on one fresh database', needsPostgres, async (t) => {
  const { url, sql } = await freshDatabase(t)
  const servers = await Promise.all([
    startServer(root, { DATABASE_URL: url, MIGRATE_ON_START: 'true' }),
    startServer(root, { DATABASE_URL: url, MIGRATE_ON_START: 'true' })
  ])
  t.teardown(() => { for (const s of servers) s.child.kill('SIGKILL') })
  for (const [i, server] of servers.entries()) t.equal((await fetch(`${server.base}/readyz`)).status, 200, `server ${i + 1} is ready`)
  await checkSchema(t, sql)
  for (const server of servers) server.child.kill('SIGTERM')
  t.same(await Promise.all(servers.map((s) => s.exited)), [0, 0], 'both exit 0 on SIGTERM')
})
