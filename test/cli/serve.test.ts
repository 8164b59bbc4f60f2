// `storefront serve` when it cannot start, and what it tells the operator on a restart: real
// processes, since the exit code, stderr and a prompt exit are the behaviour under test.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { createApiKey } from '../../db/api-keys.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { migrateDatabase, openDatabase } from '../../db/client.ts'
import { startServer } from '../server-process.ts'
import { createEmptyDatabase, sleep } from '../helper.ts'
import { cleanEnv } from './spawn.ts'

// Each case spawns tsx, and an embedded start migrates first: slow on a busy machine.
t.setTimeout(300_000)

const root = fileURLToPath(new URL('../..', import.meta.url))
const BIN = join(root, 'bin/storefront.js')

interface Exit { code: number | null, stdout: string, stderr: string, /** Milliseconds from the last stderr output to the exit. */ lingeredMs: number }

function serve (env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve, reject) => {
    // A clean environment: nothing of the test runner's (NODE_OPTIONS, DATABASE_URL…) leaks in.
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: cleanEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env }),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    let lastError = Date.now()
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; lastError = Date.now() })
    child.on('error', reject)
    child.on('exit', (code) => {
      const lingeredMs = Date.now() - lastError
      child.on('close', () => resolve({ code, stdout, stderr, lingeredMs }))
    })
    // A start that hangs must fail the test, not stall it.
    setTimeout(() => child.kill('SIGKILL'), 120_000).unref()
  })
}

/** Where `serve` keeps its data in this run: a fresh PostgreSQL database with TEST_DATABASE_URL, else the embedded one. */
async function store (t: Test): Promise<{ env: Record<string, string>, dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sf-serve-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl) return { env: { DATA_DIR: dataDir }, dataDir }
  const url = await createEmptyDatabase(t, 'sf_serve', adminUrl)
  return { env: { DATABASE_URL: url, MIGRATE_ON_START: 'true', DATA_DIR: dataDir }, dataDir }
}

t.test('serve that cannot start exits non-zero with one line naming the cause', async (t) => {
  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => { taken.close() })
  const port = (taken.address() as { port: number }).port
  const { env, dataDir } = await store(t)

  const [inUse, unreachable, badPort] = await Promise.all([
    serve({ ...env, PORT: String(port) }),
    serve({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing', PORT: '0' }),
    serve({ ...env, PORT: 'abc' })
  ])

  t.equal(inUse.code, 1, 'port in use: exit code 1')
  t.equal(inUse.stderr, `storefront: cannot listen on 127.0.0.1:${port}: the address is in use\n`, 'port in use: one line')
  // The database was open when listen failed: left open, it would keep the process alive.
  t.ok(inUse.lingeredMs < 5000, `port in use: exits promptly after reporting (${inUse.lingeredMs} ms)`)
  if (!env.DATABASE_URL) t.notOk(existsSync(join(dataDir, 'storefront.lock')), 'port in use: the embedded database was closed')

  t.equal(unreachable.code, 1, 'database unreachable: exit code 1')
  t.equal(unreachable.stderr, 'storefront: cannot reach the database at 127.0.0.1:1 (primary): connection refused\n', 'database unreachable: one line, no SQL')
  t.ok(unreachable.lingeredMs < 5000, `database unreachable: exits promptly after reporting (${unreachable.lingeredMs} ms)`)

  t.strictSame({ ...badPort, lingeredMs: 0 }, { code: 2, stdout: '', stderr: 'storefront: invalid configuration: PORT must be integer\n', lingeredMs: 0 }, 'PORT=abc: exit code 2 naming PORT')
})

t.test('a restart on the embedded database says how to make a key while the server holds it', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sf-serve-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  // A store that has a key and a product, so the start loads no demo catalogue and prints no key.
  const database = await openDatabase({ dataDir })
  try {
    await migrateDatabase(database)
    await createApiKey(database.db, { name: 'existing', scopes: ['products:list'] })
    await importCatalog(database, { products: [{ id: 'c0ffee00-0000-4000-8000-000000000001', name: 'Espresso', quantity: 1, price: 9, isAvailable: true }] })
  } finally {
    await database.close()
  }

  const server = await startServer(root, { DATA_DIR: dataDir })
  t.teardown(() => { server.child.kill('SIGKILL') })
  // The hint is printed once listening: /healthz may answer a moment before it is written.
  for (let waited = 0; !server.output().includes('API reference:') && waited < 10_000; waited += 100) {
    await sleep(100)
  }
  const output = server.output()
  t.notMatch(output, /sk_[A-Za-z0-9_-]{43}/, 'no new key is printed')
  t.match(output, 'API keys exist already. To make another, stop this server first (Ctrl+C)', 'stop the server first')
  t.match(output, `embedded database in ${dataDir}, so commands cannot open it while it runs`, 'because it holds the embedded database')
  t.match(output, '\n  npx storefront keys create --name NAME --scopes products:list,products:find\n', 'then the command')
  t.match(output, 'With PostgreSQL (DATABASE_URL), operator commands run beside the server.', 'or PostgreSQL')
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0)
})
