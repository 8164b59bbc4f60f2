// The heap bound `storefront serve` applies itself (bin/heap.js): started without any flag,
// the process that serves runs with the old space capped at HEAP_LIMIT_MB, and the launcher
// it needed on Node 20 passes signals on and takes the server down with it; `npm start` gives
// the server the same flags itself and needs no launcher.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { DEFAULT_HEAP_LIMIT_MB, heapFlags, heapLimitMb, needsBound } from '../../bin/heap.js'
import { loadConfig } from '../../config.ts'
import { until } from '../helper.ts'
import { startServer } from '../server-process.ts'

const root = new URL('../..', import.meta.url).pathname
const MB = 2 ** 20
// Three real starts of the server from the sources (through tsx), on a machine that may be busy.
const START_MS = 240_000
t.setTimeout(3 * START_MS + 60_000)

t.test('HEAP_LIMIT_MB: read as config.ts reads it, and when a process needs the bound', async (t) => {
  t.equal(heapLimitMb({}), DEFAULT_HEAP_LIMIT_MB)
  t.equal(loadConfig({}).HEAP_LIMIT_MB, DEFAULT_HEAP_LIMIT_MB, 'config.ts declares the same default')
  t.equal(heapLimitMb({ HEAP_LIMIT_MB: '256' }), 256)
  t.equal(heapLimitMb({ HEAP_LIMIT_MB: '0' }), 0)
  t.throws(() => heapLimitMb({ HEAP_LIMIT_MB: 'lots' }), /HEAP_LIMIT_MB must be a whole number/)
  t.throws(() => heapLimitMb({ HEAP_LIMIT_MB: '-1' }), /HEAP_LIMIT_MB/)
  t.same(heapFlags(128, []), ['--max-old-space-size=128', '--max-semi-space-size=8'], 'the cap, and a young generation of 8 MB semi-spaces')
  t.same(heapFlags(128, ['--max-semi-space-size=32']), ['--max-old-space-size=128'], 'a semi-space given is kept')
  t.same(heapFlags(0, []), [], '0: V8 sizes the heap itself')
  t.ok(needsBound(128, 4096 * MB, []), 'V8\'s own sizing on a large machine is not bounded')
  t.notOk(needsBound(128, 176 * MB, []), 'capped at 128 (plus the young generation): bounded already')
  t.notOk(needsBound(0, 4096 * MB), 'no bound wanted')
  t.notOk(needsBound(128, 560 * MB, ['--max-old-space-size=512']), 'a cap given on the command line is respected')
  t.notOk(needsBound(128, 560 * MB, ['--enable-source-maps --max_old_space_size=512']), 'and one in NODE_OPTIONS')
})

t.test('`node bin/heap.js --flags`: the flags a command line gives the server, nothing when none are needed', async (t) => {
  const flags = (env: Record<string, string>) => execFileSync(process.execPath, ['bin/heap.js', '--flags'], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' })
  t.equal(flags({}), `--max-old-space-size=${DEFAULT_HEAP_LIMIT_MB} --max-semi-space-size=8`)
  t.equal(flags({ HEAP_LIMIT_MB: '256' }), '--max-old-space-size=256 --max-semi-space-size=8')
  t.equal(flags({ HEAP_LIMIT_MB: '0' }), '', '0: V8 sizes the heap itself')
  t.equal(flags({ NODE_OPTIONS: '--max-old-space-size=512' }), '', 'a cap in NODE_OPTIONS is respected')
  t.equal(flags({ HEAP_LIMIT_MB: 'lots' }), '', 'an invalid value gives none: the server then says what is wrong')
})

/** The processes `pid` started. */
const childrenOf = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
const commandLine = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
const alive = (pid: number) => { try { process.kill(pid, 0); return true } catch { return false } }

// From Node 22.15 the launcher replaces itself with the bounded server (process.execve): one process.
const replacesItself = typeof (process as { execve?: unknown }).execve === 'function'

t.test('`node bin/storefront.js serve` without flags serves from a process whose heap is capped; SIGTERM stops both and exits 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sf-heap-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = await startServer(root, { DATA_DIR: dataDir }, START_MS)
  t.teardown(() => { server.child.kill('SIGKILL') })
  const [serving] = replacesItself ? [server.child.pid!] : childrenOf(server.child.pid!)
  if (replacesItself) t.strictSame(childrenOf(server.child.pid!), [], 'the launcher became the server: one process')
  else t.ok(serving, 'the launcher started the serving process')
  t.ok(commandLine(serving!).includes(`--max-old-space-size=${DEFAULT_HEAP_LIMIT_MB}`), 'which runs with the heap cap')
  t.ok(commandLine(serving!).includes('--max-semi-space-size=8'), 'and the smaller young generation')
  t.equal((await fetch(`${server.base}/healthz`)).status, 200)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'the launcher exits as the server did')
  t.notOk(alive(serving!), 'the server is gone')
})

t.test('`npm start` serves from one process under npm, started with the heap cap, on any Node; SIGTERM to npm stops it', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sf-heap-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = await startServer(root, { DATA_DIR: dataDir }, START_MS, ['npm', ['start', '--ignore-scripts', '--silent']])
  t.teardown(() => { server.child.kill('SIGKILL') })
  const started = childrenOf(server.child.pid!)
  t.equal(started.length, 1, 'npm started one process')
  const serving = started[0]!
  t.ok(commandLine(serving).includes(`--max-old-space-size=${DEFAULT_HEAP_LIMIT_MB}`), 'with the heap cap on its command line')
  t.strictSame(childrenOf(serving), [], 'and it serves itself: no launcher beside it')
  t.equal((await fetch(`${server.base}/healthz`)).status, 200)
  server.child.kill('SIGTERM')
  t.equal(await server.exited, 0, 'npm exits as the server did')
  t.notOk(alive(serving), 'the server is gone')
})

t.test('the server stops when its launcher is killed outright', { skip: replacesItself ? 'one process here: no launcher to lose' : false }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sf-heap-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const server = await startServer(root, { DATA_DIR: dataDir }, START_MS)
  const [serving] = childrenOf(server.child.pid!)
  t.teardown(() => { if (serving && alive(serving)) process.kill(serving, 'SIGKILL') })
  server.child.kill('SIGKILL')
  await until('the server to stop', () => (alive(serving!) ? undefined : true))
  t.pass('it closed when its parent went')
})
