// The container's path without Docker: `npm run build` (bin/build.js) on the sources, then
// a tree of what the image holds (package files, production dependencies, dist/, bin/),
// running the image's exact start command and an operator command.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createTestDatabase, usingPostgres } from '../helper.ts'
import { startServer } from '../server-process.ts'

const root = new URL('../..', import.meta.url).pathname

t.test('the pruned production build serves with `node bin/storefront.js serve`', async (t) => {
  const tree = mkdtempSync(join(tmpdir(), 'sf-prod-'))
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  // The build stage: the sources, built as the Dockerfile does.
  const stage = join(tree, 'stage')
  const sources = readdirSync(root).filter((name) => name.endsWith('.ts'))
  for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'cli', 'plugins', 'routes', 'services', 'db', 'schemas', 'lib', ...sources]) {
    cpSync(join(root, entry), join(stage, entry), { recursive: true })
  }
  symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'))
  execFileSync('npm', ['run', 'build'], { cwd: stage, stdio: 'pipe', env: { ...process.env, NODE_OPTIONS: '' } })
  // The image: no sources.
  const image = join(tree, 'image')
  cpSync(join(stage, 'dist'), join(image, 'dist'), { recursive: true })
  for (const file of ['package.json', 'package-lock.json', 'patches', 'bin']) cpSync(join(root, file), join(image, file), { recursive: true })
  t.ok(existsSync(join(image, 'dist/db/migrations/meta/_journal.json')), 'the migrations are beside the compiled db/')
  execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: image, stdio: 'pipe' })
  t.match(readFileSync(join(image, 'node_modules/postgres/src/connection.js'), 'utf8'), /clearImmediate\(nextWriteTimer\)\n\s+chunk = nextWriteTimer = null/, 'the install patched the database driver')
  t.throws(() => execFileSync(process.execPath, ['-e', 'import("tsx")'], { cwd: image, stdio: 'pipe' }), 'no dev dependency is left')

  const env: Record<string, string> = usingPostgres
    ? { DATABASE_URL: (await createTestDatabase(t)).url!, MIGRATE_ON_START: 'true' }
    : { DATA_DIR: join(image, 'data') }
  const server = await startServer(image, { NODE_ENV: 'production', STOREFRONT_SOURCE: '', ...env })
  t.teardown(() => { server.child.kill('SIGKILL') })

  t.equal((await fetch(`${server.base}/healthz`)).status, 200)
  t.equal((await fetch(`${server.base}/readyz`)).status, 200)
  const unauthorised = await fetch(`${server.base}/external/v1/products`)
  t.equal(unauthorised.status, 401)
  t.match(await unauthorised.json(), { error: 'invalid_api_key' })
  t.equal((await fetch(`${server.base}/openapi.json`)).status, 200)

  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'exits 0 on SIGTERM')

  // An operator command in the image: a streamed import of the example catalogue.
  const commandEnv = { ...process.env, NODE_OPTIONS: '', STOREFRONT_SOURCE: '', LOG_LEVEL: 'warn', ...env }
  const imported = execFileSync(process.execPath, ['bin/storefront.js', 'catalog', 'import', join(root, 'examples/catalog.json'), '--json'], { cwd: image, env: commandEnv, encoding: 'utf8' })
  t.match(JSON.parse(imported), { products: 4, categories: 3, brands: 2 }, 'node bin/storefront.js catalog import works there')
})
