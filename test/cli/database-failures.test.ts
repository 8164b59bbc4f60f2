// Every operator command, on a database it cannot use: exit code 1 and one line on stderr
// naming the database (host:port and role) and the cause — never SQL — and, when the tables
// are missing, the command that makes them.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createEmptyDatabase } from '../helper.ts'
import { runStorefront } from './spawn.ts'

t.setTimeout(600_000)

/** Every command that opens the database, with arguments it would accept. */
async function commands (t: Test): Promise<string[][]> {
  const dir = await mkdtemp(join(tmpdir(), 'sf-failures-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'catalog.json')
  await writeFile(file, JSON.stringify({ products: [{ id: 'c0ffee00-0000-4000-8000-000000000001', name: 'Espresso', quantity: 1, price: 9, isAvailable: true }] }))
  return [
    ['keys', 'list'],
    ['keys', 'create', '--name', 'x', '--scopes', 'products:list'],
    ['keys', 'revoke', 'c0ffee00-0000-4000-8000-000000000001'],
    ['keys', 'set-rate-limit', 'c0ffee00-0000-4000-8000-000000000001', '10'],
    ['settings', 'list'],
    ['settings', 'set', 'deliveryFee', '4.99'],
    ['maintenance', 'status'],
    ['maintenance', 'on'],
    ['catalog', 'import', file],
    ['catalog', 'demo'],
    ['orders', 'set-status', '100001', 'confirmed'],
    ['webhooks', 'list', '--json']
  ]
}

async function expectEveryCommand (t: Test, env: Record<string, string>, line: RegExp | string, extra: string[][] = []) {
  const list = [...await commands(t), ...extra]
  const results = await Promise.all(list.map((args) => runStorefront(env, args)))
  list.forEach((args, i) => {
    const result = results[i]!
    const what = args.slice(0, 2).join(' ')
    t.equal(result.code, 1, `${what}: exit code 1`)
    t.equal(result.stdout, '', `${what}: nothing on stdout`)
    if (typeof line === 'string') t.equal(result.stderr, line, `${what}: one line naming the database and the cause`)
    else t.match(result.stderr, line, `${what}: one line naming the database and the cause`)
    t.notMatch(result.stderr, /select|insert|Failed query|params:/i, `${what}: no SQL`)
  })
}

t.test('an unreachable database', async (t) => {
  await expectEveryCommand(t, { DATABASE_URL: 'postgres://postgres:secret@127.0.0.1:1/store' },
    'storefront: cannot reach the database at 127.0.0.1:1 (primary): connection refused\n', [['migrate']])
})

const adminUrl = process.env.TEST_DATABASE_URL
t.test('a database that does not exist, and one not migrated', { skip: adminUrl ? false : 'needs TEST_DATABASE_URL (a PostgreSQL server)' }, async (t) => {
  const server = new URL(adminUrl!)
  const at = `${server.hostname}:${server.port || '5432'}`
  const missing = new URL(adminUrl!)
  const name = `sf_missing_${randomBytes(4).toString('hex')}`
  missing.pathname = `/${name}`
  await expectEveryCommand(t, { DATABASE_URL: missing.href },
    `storefront: the database at ${at} (primary) has no such database: database "${name}" does not exist; create it, or fix the URL\n`, [['migrate']])

  const empty = await createEmptyDatabase(t, 'sf_cli', adminUrl!)
  const notMigrated = new RegExp(`^storefront: the database at ${at.replace(/\./g, '\\.')} \\(primary\\) is not migrated \\(relation "[a-z_]+" does not exist\\): run storefront migrate\\n$`)
  await expectEveryCommand(t, { DATABASE_URL: empty }, notMigrated)
  const migrated = await runStorefront({ DATABASE_URL: empty }, ['migrate'])
  t.strictSame(migrated, { code: 0, stdout: 'migrations applied\n', stderr: '' }, 'what the line suggests works')
  const listed = await runStorefront({ DATABASE_URL: empty }, ['keys', 'list', '--json'])
  t.strictSame(listed, { code: 0, stdout: '[]\n', stderr: '' }, 'then the commands work')
})

t.test('migrations name the direct session URL they use', async (t) => {
  const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/store', DATABASE_DIRECT_URL: 'postgres://postgres@127.0.0.1:2/store' }
  const [migrate, serve] = await Promise.all([
    runStorefront(env, ['migrate']),
    runStorefront({ ...env, MIGRATE_ON_START: 'true', PORT: '0' }, ['serve'])
  ])
  const line = 'storefront: cannot reach the database at 127.0.0.1:2 (direct): connection refused\n'
  t.strictSame(migrate, { code: 1, stdout: '', stderr: line }, 'migrate')
  t.strictSame(serve, { code: 1, stdout: '', stderr: line }, 'serve with MIGRATE_ON_START')
})
