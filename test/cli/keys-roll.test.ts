// `storefront keys roll` as an operator runs it, on a fresh embedded database or, when
// TEST_DATABASE_URL is set, on a fresh PostgreSQL database: the new secret printed once, the
// previous one kept for the grace, `keys list` showing when it ends, and the refusals (exit 2,
// nothing changed). Commands run one at a time: the embedded database is one process's at a time.
import { createHash, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { execute, openDatabase, type Database } from '../../db/client.ts'
import { createEmptyDatabase } from '../helper.ts'
import { runStorefront, type Result } from './spawn.ts'

t.setTimeout(600_000)

const HOUR = 3_600_000
const sha256 = (secret: string) => createHash('sha256').update(secret).digest('hex')

interface Backend { env: Record<string, string>, open: () => Promise<Database> }

async function backendFor (t: Test): Promise<Backend> {
  const adminUrl = process.env.TEST_DATABASE_URL
  if (adminUrl) {
    const url = await createEmptyDatabase(t, 'sf_roll', adminUrl)
    return { env: { DATABASE_URL: url }, open: () => openDatabase({ url, poolSize: 1 }) }
  }
  const dir = await mkdtemp(join(tmpdir(), 'sf-roll-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return { env: { DATA_DIR: dir }, open: () => openDatabase({ dataDir: dir }) }
}

function json (t: Test, result: Result, what: string): any {
  t.equal(result.code, 0, `${what}: exit code 0${result.code === 0 ? '' : ` (stderr: ${result.stderr})`}`)
  t.equal(result.stderr, '', `${what}: nothing on stderr`)
  return JSON.parse(result.stdout)
}

function refused (t: Test, result: Result, message: RegExp, what: string): void {
  t.equal(result.code, 2, `${what}: exit code 2`)
  t.equal(result.stdout, '', `${what}: nothing on stdout`)
  t.match(result.stderr, message, `${what}: stderr says why`)
}

t.test('keys roll', async (t) => {
  const backend = await backendFor(t)
  const run = (args: string[]) => runStorefront(backend.env, args)
  const hashes = async (id: string) => {
    const database = await backend.open()
    try {
      const [row] = await execute<{ key_hash: string, previous_key_hash: string | null }>(database.db, sql`select key_hash, previous_key_hash from api_keys where id = ${id}`)
      return row!
    } finally {
      await database.close()
    }
  }

  if (backend.env.DATABASE_URL) json(t, await run(['migrate', '--json']), 'migrate')
  const created = json(t, await run(['keys', 'create', '--name', 'Alpha shop', '--scopes', 'products:list', '--json']), 'keys create')
  const listed = json(t, await run(['keys', 'list', '--json']), 'keys list before a roll')
  t.strictSame(Object.keys(listed[0]), ['id', 'name', 'state', 'mode', 'scopes', 'expiresAt', 'lastUsedAt', 'rateLimit', 'previousKeyExpiresAt', 'createdAt'])
  t.equal(listed[0].previousKeyExpiresAt, null, 'no previous secret before the first roll')

  let rolled: { id: string, key: string, previousKeyExpiresAt: string }
  await t.test('--json: the new secret once, and when the previous one ends (24 h by default)', async (t) => {
    const before = Date.now()
    rolled = json(t, await run(['keys', 'roll', created.id, '--json']), 'keys roll')
    t.strictSame(Object.keys(rolled), ['id', 'key', 'previousKeyExpiresAt'])
    t.equal(rolled.id, created.id)
    t.match(rolled.key, /^sk_[A-Za-z0-9_-]{43}$/, 'a secret of the same form')
    t.not(rolled.key, created.key)
    const ends = Date.parse(rolled.previousKeyExpiresAt)
    t.ok(ends >= before + 24 * HOUR - 5000 && ends <= Date.now() + 24 * HOUR + 5000, `the previous secret ends in 24 h: ${rolled.previousKeyExpiresAt}`)
    t.strictSame(await hashes(created.id), { key_hash: sha256(rolled.key), previous_key_hash: sha256(created.key) }, 'both secrets stored only as hashes')
    const list = json(t, await run(['keys', 'list', '--json']), 'keys list')
    t.equal(list[0].previousKeyExpiresAt, rolled.previousKeyExpiresAt, 'keys list --json shows when the previous secret ends')
    const text = await run(['keys', 'list'])
    t.match(text.stdout, `previousKeyExpires=${rolled.previousKeyExpiresAt}`, 'and so does the text')
  })

  await t.test('text, with a grace: the secret on a line of its own and when the previous one ends', async (t) => {
    const result = await run(['keys', 'roll', created.id, '--grace', '30m'])
    t.equal(result.code, 0, result.stderr)
    const lines = result.stdout.trim().split('\n')
    t.match(lines[0], `rolled key ${created.id}`)
    t.match(lines[1], /^sk_[A-Za-z0-9_-]{43}$/)
    t.match(lines[2], /not shown again.*previous secret works until \d{4}-\d{2}-\d{2}T[\d:.]+Z \(grace 30m\)/)
    const { key_hash: current, previous_key_hash: previous } = await hashes(created.id)
    t.equal(current, sha256(lines[1]!), 'the printed secret is the key\'s secret now')
    t.equal(previous, sha256(rolled.key), 'the previous secret is the one rolled before; the first one is gone')
    const until = Date.parse(/until (\S+)/.exec(lines[2]!)![1]!)
    t.ok(Math.abs(until - (Date.now() + HOUR / 2)) < 60_000, 'it ends in 30 minutes')
  })

  await t.test('--grace 0: the previous secret ends at once, and keys list shows none', async (t) => {
    const result = await run(['keys', 'roll', created.id.toUpperCase(), '--grace', '0'])
    t.equal(result.code, 0, result.stderr)
    t.match(result.stdout, /previous secret has stopped working/)
    t.match(result.stdout, /\nsk_[A-Za-z0-9_-]{43}\n/)
    const list = json(t, await run(['keys', 'list', '--json']), 'keys list')
    t.equal(list[0].previousKeyExpiresAt, null)
    t.notMatch((await run(['keys', 'list'])).stdout, /previousKeyExpires=/)
  })

  await t.test('refusals: exit 2, nothing printed on stdout, the key unchanged', async (t) => {
    const before = await hashes(created.id)
    refused(t, await run(['keys', 'roll', created.id, '--grace', '8d']), /^storefront: the grace must be from 0 to 7 days \(7d\), got 8d\n$/, '--grace 8d')
    refused(t, await run(['keys', 'roll', created.id, '--grace', 'abc', '--json']), /--grace must be 0 or a whole number with a unit s, m, h or d .*got abc/, '--grace abc')
    refused(t, await run(['keys', 'roll', randomUUID(), '--json']), /no key has id/, 'an unknown id')
    refused(t, await run(['keys', 'roll', 'abc']), /keys roll needs a key id.*got abc/, 'not a GUID')
    refused(t, await run(['keys', 'roll']), /keys roll needs a key id/, 'no id')
    t.strictSame(await hashes(created.id), before, 'the key kept its secrets')
    json(t, await run(['keys', 'revoke', created.id, '--json']), 'revoke')
    refused(t, await run(['keys', 'roll', created.id]), /revoked; a revoked key cannot be used again/, 'a revoked key')
    t.strictSame(await hashes(created.id), before, 'the revoked key kept its secrets')
  })

  await t.test('help', async (t) => {
    const help = await run(['keys', 'roll', '--help'])
    t.equal(help.code, 0)
    t.match(help.stdout, /^Usage: storefront keys roll \[options\] <ID>\n/)
    t.match(help.stdout.replace(/\s+/g, ' '), '--grace <duration> how long the old secret keeps working: 0 (ends now), 90s, 30m, 24h, up to 7d (default: "24h")')
    t.match(help.stdout, /Rolling again ends the older previous secret at once/)
  })
})
