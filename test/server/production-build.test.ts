// The container's path without Docker: `npm run build`, prune to production dependencies,
// then the image's exact start command on that tree.
import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createTestDatabase, usingPostgres } from '../helper.ts'
import { startServer } from '../server-process.ts'

const root = new URL('../..', import.meta.url).pathname

t.test('the pruned production build serves with `node bin/storefront.js serve`', async (t) => {
  const tree = mkdtempSync(join(tmpdir(), 'sf-prod-'))
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  const outDir = join(tree, 'dist')
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: root, stdio: 'pipe' })
  cpSync(join(root, 'db/migrations'), join(outDir, 'db/migrations'), { recursive: true })
  for (const file of ['package.json', 'package-lock.json', 'patches', 'bin']) cpSync(join(root, file), join(tree, file), { recursive: true })
  execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: tree, stdio: 'pipe' })
  t.match(readFileSync(join(tree, 'node_modules/postgres/src/connection.js'), 'utf8'), /clearImmediate\(nextWriteTimer\)\n\s+chunk = nextWriteTimer = null/, 'the install patched the database driver')
  t.throws(() => execFileSync(process.execPath, ['-e', 'import("tsx")'], { cwd: tree, stdio: 'pipe' }), 'no dev dependency is left')

  const env: Record<string, string> = usingPostgres
    ? { DATABASE_URL: (await createTestDatabase(t)).url!, MIGRATE_ON_START: 'true' }
    : { DATA_DIR: join(tree, 'data') }
  const server = await startServer(tree, { NODE_ENV: 'production', ...env })
  t.teardown(() => { server.child.kill('SIGKILL') })

  t.equal((await fetch(`${server.base}/healthz`)).status, 200)
  t.equal((await fetch(`${server.base}/readyz`)).status, 200)
  const unauthorised = await fetch(`${server.base}/external/v1/products`)
  t.equal(unauthorised.status, 401)
  t.match(await unauthorised.json(), { error: 'invalid_api_key' })
  t.equal((await fetch(`${server.base}/openapi.json`)).status, 200)

  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'exits 0 on SIGTERM')
})
