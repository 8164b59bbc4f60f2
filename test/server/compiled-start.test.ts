// `npm start` on a checkout builds dist/ when it is missing or older than the sources, then
// serves compiled JavaScript: no TypeScript loader in the serving process. The `storefront`
// command runs dist/ while it matches the sources, and the sources through tsx once they
// change. Each check runs a copy of the checkout (its sources, not its dist/) and records,
// through a module hook, every module each process loads.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { createTestDatabase, sleep, usingPostgres } from '../helper.ts'
import { freePort, printedKey } from '../server-process.ts'

// Two builds (tsc, about 20 s each on a quiet machine) and a start.
t.setTimeout(900_000)

const root = new URL('../..', import.meta.url).pathname

function copyCheckout (): string {
  const tree = mkdtempSync(join(tmpdir(), 'sf-start-'))
  const sources = readdirSync(root).filter((name) => name.endsWith('.ts'))
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'cli', 'plugins', 'routes', 'services', 'db', 'schemas', 'lib', ...sources]) {
    cpSync(join(root, entry), join(tree, entry), { recursive: true })
  }
  symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'))
  // Every process started with it appends its pid and command line, and every module it loads.
  writeFileSync(join(tree, 'record.mjs'), `import { appendFileSync } from 'node:fs'
import { register } from 'node:module'
appendFileSync(process.env.RECORD_FILE, process.pid + ' argv ' + process.argv.slice(1).join(' ') + '\\n')
register('./record-hooks.mjs', import.meta.url)
`)
  writeFileSync(join(tree, 'record-hooks.mjs'), `import { appendFileSync } from 'node:fs'
export async function load (url, context, next) {
  appendFileSync(process.env.RECORD_FILE, process.pid + ' load ' + url + '\\n')
  return next(url, context)
}
`)
  return tree
}

/** The environment of a process in `tree`, recorded into `record`: nothing of the test runner's loaders or coverage. */
function environment (tree: string, record: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: `--import=${pathToFileURL(join(tree, 'record.mjs')).href}`, RECORD_FILE: record, LOG_LEVEL: 'warn', ...extra }
  for (const name of ['STOREFRONT_SOURCE', 'NODE_V8_COVERAGE', 'DATABASE_URL', 'DATA_DIR', 'MIGRATE_ON_START']) if (!(name in extra)) delete env[name]
  return env
}

interface Image { pid: string, modules: string[] }

/**
 * What each program run recorded whose command line matches `command`: its pid and the
 * modules it loaded. A process that replaced itself (process.execve, Node 22.15 and later) is
 * one pid with a run before and a run after.
 */
function loadedBy (record: string, command: RegExp): Image[] {
  const images: Array<Image & { argv: string }> = []
  const current = new Map<string, Image & { argv: string }>()
  for (const line of readFileSync(record, 'utf8').split('\n').filter(Boolean)) {
    const [pid = '', kind, ...rest] = line.split(' ')
    if (kind === 'argv') {
      const image = { pid, argv: rest.join(' '), modules: [] }
      images.push(image)
      current.set(pid, image)
    } else if (kind === 'load') {
      current.get(pid)?.modules.push(rest.join(' '))
    }
  }
  return images.filter((image) => command.test(image.argv))
}

function storefront (tree: string, record: string, args: string[], extra: Record<string, string> = {}): string {
  writeFileSync(record, '')
  return execFileSync(process.execPath, ['bin/storefront.js', ...args], { cwd: tree, env: environment(tree, record, extra), encoding: 'utf8' })
}

const isTsx = (url: string) => url.includes('/node_modules/tsx/')

/** Waits until the server `child` started answers /healthz on `port`; fails if it exits first or not within `ms`. */
async function untilServing (child: ChildProcess, port: number, what: string, ms: number, output = () => ''): Promise<void> {
  for (const deadline = Date.now() + ms; ;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}:\n${output()}`)
    if (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) return
    if (Date.now() > deadline) throw new Error(`${what} did not serve in time:\n${output()}`)
    await sleep(500)
  }
}

t.test('npm start builds dist/ and serves it without a TypeScript loader', async (t) => {
  const tree = copyCheckout()
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  const record = join(tree, 'record.log')
  appendFileSync(record, '')
  const port = await freePort()
  const store: Record<string, string> = usingPostgres
    ? { DATABASE_URL: (await createTestDatabase(t)).url!, MIGRATE_ON_START: 'true' }
    : { DATA_DIR: join(tree, 'data') }
  t.notOk(existsSync(join(tree, 'dist')), 'a checkout without dist/')

  // Its own process group, so the signal reaches npm and the server under it.
  const child = spawn('npm', ['start'], {
    cwd: tree,
    env: environment(tree, record, { HOST: '127.0.0.1', PORT: String(port), npm_config_update_notifier: 'false', ...store }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch {} })
  const base = `http://127.0.0.1:${port}`
  await untilServing(child, port, 'npm start', 600_000, () => output)

  t.match(output, /dist\/ is missing or older than the sources; compiling/, 'prestart built dist/')
  t.ok(existsSync(join(tree, 'dist/.source-hash')), 'with the fingerprint of its sources')
  t.equal((await fetch(`${base}/readyz`)).status, 200, 'ready: the migrations were found beside the compiled code')
  if (!usingPostgres) {
    const key = printedKey(output)
    const products = await fetch(`${base}/external/v1/products`, { headers: { 'x-api-key': key ?? '' } })
    t.equal(products.status, 200, 'the demo store serves')
    t.match(await products.json(), { total: 37 })
  }

  // `npm start` gives the server its heap flags itself (`node bin/heap.js --flags`), so on
  // every Node one process runs `serve` once: no launcher runs it again.
  const runs = loadedBy(record, /bin\/storefront\.js serve$/)
  t.equal(runs.length, 1, 'one run of serve: the server itself, no launcher')
  const server = runs[0]?.modules
  t.ok(server?.includes(pathToFileURL(join(tree, 'dist/cli/main.js')).href), 'the server runs dist/cli.js')
  t.ok(server?.includes(pathToFileURL(join(tree, 'dist/server.js')).href), 'and dist/server.js')
  t.strictSame(server?.filter(isTsx), [], 'no module of tsx is loaded')
  t.strictSame(server?.filter((url) => url.endsWith('.ts')), [], 'no TypeScript file is loaded')

  process.kill(-child.pid!, 'SIGTERM')
  await exited

  // `node bin/storefront.js serve` (the image's command) runs itself again under the cap: in
  // place from Node 22.15 (one process, two runs), else as a launcher beside the server.
  writeFileSync(record, '')
  const directPort = await freePort()
  const direct = spawn(process.execPath, ['bin/storefront.js', 'serve'], {
    cwd: tree,
    env: environment(tree, record, { HOST: '127.0.0.1', PORT: String(directPort), ...store }),
    stdio: 'ignore',
    detached: true
  })
  const directExited = new Promise<number | null>((resolve) => direct.on('exit', resolve))
  t.teardown(() => { try { process.kill(-direct.pid!, 'SIGKILL') } catch {} })
  await untilServing(direct, directPort, 'serve', 120_000)
  const serveRuns = loadedBy(record, /bin\/storefront\.js serve$/)
  const served = serveRuns.find((run) => run.modules.includes(pathToFileURL(join(tree, 'dist/server.js')).href))?.modules
  const launchers = serveRuns.filter((run) => run.modules !== served)
  t.equal(new Set(serveRuns.map((run) => run.pid)).size, typeof (process as { execve?: unknown }).execve === 'function' ? 1 : 2, 'serve: one serving process (and its launcher, where it needs one)')
  t.equal(launchers.length, 1, 'one launcher run')
  t.strictSame(launchers.flatMap((run) => run.modules.filter((url) => url.startsWith(pathToFileURL(join(tree, 'dist')).href) || isTsx(url))), [], 'the launcher loads neither dist/ nor tsx')
  process.kill(-direct.pid!, 'SIGTERM')
  await directExited
})

t.test('the storefront command runs dist/ while it matches the sources, else the sources', async (t) => {
  const tree = copyCheckout()
  t.teardown(() => rmSync(tree, { recursive: true, force: true }))
  const record = join(tree, 'record.log')
  const modules = () => loadedBy(record, /bin\/storefront\.js --version$/)[0]?.modules ?? []
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version as string

  t.equal(storefront(tree, record, ['--version']).trim(), version, 'a checkout never built: the sources')
  t.ok(modules().some(isTsx), 'through tsx')

  execFileSync('npm', ['run', 'build'], { cwd: tree, env: environment(tree, record), stdio: 'pipe' })
  t.equal(storefront(tree, record, ['--version']).trim(), version)
  t.ok(modules().includes(pathToFileURL(join(tree, 'dist/cli/main.js')).href), 'built: dist/')
  t.notOk(modules().some(isTsx), 'without tsx')
  storefront(tree, record, ['--version'], { STOREFRONT_SOURCE: '1' })
  t.ok(modules().some(isTsx), 'STOREFRONT_SOURCE=1: the sources, as npm run dev and coverage want')

  appendFileSync(join(tree, 'lib/money.ts'), '\n// edited\n')
  storefront(tree, record, ['--version'])
  t.ok(modules().some(isTsx), 'a source edited since the build: the sources, not the stale dist/')
  t.notOk(modules().includes(pathToFileURL(join(tree, 'dist/cli/main.js')).href))

  const rebuilt = execFileSync(process.execPath, ['bin/build.js', '--if-stale'], { cwd: tree, env: environment(tree, record), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  t.equal(rebuilt, '', 'the build says nothing on stdout')
  storefront(tree, record, ['--version'])
  t.notOk(modules().some(isTsx), 'built again: dist/')
  const started = Date.now()
  execFileSync(process.execPath, ['bin/build.js', '--if-stale'], { cwd: tree, env: environment(tree, record), stdio: 'pipe' })
  t.ok(Date.now() - started < 20_000, 'up to date: no build')
})
