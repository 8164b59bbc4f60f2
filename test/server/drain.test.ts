// The drain under every way of stopping, on real processes in a process group the test makes
// itself (spawned detached: a group of their own, as a terminal or a service manager gives
// them). Whether the signal reaches the launcher, the server, both, or the whole group (Ctrl-C,
// systemd's control-group kill), or npm's own process under `npm start`: the request in flight
// is answered, /readyz stops answering 200, every process exits 0, none is left behind. A
// signal that comes again once the first was handled forces the exit. On Node 20 `serve` is a
// launcher and a heap-bounded child; from Node 22.15 the launcher replaces itself (one
// process): CI runs this file on both.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { createApiKey } from '../../db/api-keys.ts'
import { migrateDatabase, openDatabase } from '../../db/client.ts'
import { importCatalog } from '../../services/catalog-import.ts'
import { createEmptyDatabase, sleep, until } from '../helper.ts'
import { freePort } from '../server-process.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
// Each case starts the server from the sources (through tsx) on a machine that may be busy.
t.setTimeout(900_000)
const START_MS = 120_000
/** A second signal within this long of the first is the same stop (server.ts). */
const SAME_STOP_MS = 1000

const PRODUCT = 'c0ffee00-0000-4000-8000-0000000000d1'

/** Where the servers keep their data: a fresh PostgreSQL database with TEST_DATABASE_URL, else an embedded one copied for each case. */
async function store (t: Test): Promise<{ key: string, env: () => Record<string, string> }> {
  const scratch = mkdtempSync(join(tmpdir(), 'sf-drain-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  const adminUrl = process.env.TEST_DATABASE_URL
  const url = adminUrl ? await createEmptyDatabase(t, 'sf_test', adminUrl) : undefined
  const template = join(scratch, 'template')
  const database = await openDatabase(url ? { url } : { dataDir: template })
  let key: string
  try {
    await migrateDatabase(database, url)
    key = (await createApiKey(database.db, { name: 'drain', scopes: ['orders:create'] })).key
    await importCatalog(database, { products: [{ id: PRODUCT, name: 'Drip', quantity: 1000, price: 3, isAvailable: true }] })
  } finally {
    await database.close()
  }
  let copies = 0
  return {
    key,
    env: (): Record<string, string> => {
      if (url) return { DATABASE_URL: url, DATA_DIR: join(scratch, 'unused') }
      const dataDir = join(scratch, `case-${++copies}`)
      cpSync(template, dataDir, { recursive: true })
      return { DATA_DIR: dataDir }
    }
  }
}

interface Running {
  leader: ChildProcess
  port: number
  output: () => string
  exited: Promise<number | null>
}

/** Starts `storefront serve` (or `npm start`) as the leader of a new process group and waits until it serves. */
async function launch (how: 'serve' | 'npm start', env: Record<string, string>): Promise<Running> {
  const port = await freePort()
  const [command, args] = how === 'serve' ? [process.execPath, ['bin/storefront.js', 'serve']] : ['npm', ['start', '--ignore-scripts', '--silent']]
  const leader = spawn(command, args, {
    cwd: root,
    detached: true,
    env: { ...process.env, NODE_OPTIONS: '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  leader.stdout!.on('data', (chunk) => { out += String(chunk) })
  leader.stderr!.on('data', (chunk) => { out += String(chunk) })
  const exited = new Promise<number | null>((resolve) => leader.on('exit', (code) => resolve(code)))
  await until('the server to answer /healthz', async () => {
    if (leader.exitCode !== null) throw new Error(`${how} exited with ${leader.exitCode}:\n${out}`)
    try {
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok ? true : undefined
    } catch {
      return undefined
    }
  }, START_MS)
  return { leader, port, output: () => out, exited }
}

/** The live processes of a group (pgid = its leader's pid), each with its parent, from /proc. */
function group (pgid: number): Array<{ pid: number, ppid: number }> {
  const members: Array<{ pid: number, ppid: number }> = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // The fields after the command's closing parenthesis: state, ppid, pgrp.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(pgrp) === pgid && state !== 'Z') members.push({ pid: Number(entry), ppid: Number(ppid) })
    } catch {}
  }
  return members
}

/** The process that serves: the group's bin/storefront.js process that started no other (on Node 20, the launcher's bounded child). */
function serverOf (pgid: number): number {
  const members = group(pgid)
  const storefront = members.filter(({ pid }) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((arg) => arg.endsWith('bin/storefront.js'))
    } catch {
      return false
    }
  })
  const server = storefront.find(({ pid }) => !storefront.some((other) => other.ppid === pid))
  if (server === undefined) throw new Error(`no server process in group ${pgid}`)
  return server.pid
}

/**
 * A create-order request on a kept-alive connection whose body is still coming: its head and
 * a first part, sent once the server has logged the request. `finish` sends the rest and a
 * /readyz behind it on the same connection, and resolves with what came back.
 */
async function inFlight (running: Running, key: string, id: string): Promise<{ finish: () => Promise<string> }> {
  const body = JSON.stringify({ customerName: 'Signal Test', customerPhone: '+14155550123', items: [{ productId: PRODUCT }] })
  const socket = net.connect(running.port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let response = ''
  socket.on('data', (chunk) => { response += String(chunk) })
  socket.on('error', () => {})
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.write(`POST /external/v1/orders HTTP/1.1\r\nHost: localhost\r\nX-Api-Key: ${key}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`)
  await until(`the server to log request ${id}`, () => running.output().includes(`"requestId":"${id}"`) ? true : undefined, 30_000)
  return {
    finish: async () => {
      socket.write(`${body.slice(10)}GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
      // Both answers, or the connection cut.
      await Promise.race([closed, until('two answers', () => (response.match(/^HTTP\/1\.1 /gm)?.length ?? 0) >= 2 ? true : undefined, 30_000)])
      socket.destroy()
      return response
    }
  }
}

type Target = 'leader' | 'server' | 'both' | 'group'

function signal (running: Running, target: Target, name: NodeJS.Signals): void {
  const pgid = running.leader.pid!
  if (target === 'group') process.kill(-pgid, name)
  if (target === 'leader' || target === 'both') process.kill(pgid, name)
  if (target === 'server' || (target === 'both' && serverOf(pgid) !== pgid)) process.kill(serverOf(pgid), name)
}

const cases: Array<[how: 'serve' | 'npm start', target: Target, signal: NodeJS.Signals, what: string]> = [
  ['serve', 'leader', 'SIGTERM', 'SIGTERM to the launcher'],
  ['serve', 'leader', 'SIGINT', 'SIGINT to the launcher'],
  ['serve', 'server', 'SIGTERM', 'SIGTERM to the process that serves'],
  ['serve', 'both', 'SIGTERM', 'SIGTERM to the launcher and to the process that serves'],
  ['serve', 'group', 'SIGTERM', 'SIGTERM to the whole group (systemd, kill -- -PGID)'],
  ['serve', 'group', 'SIGINT', 'SIGINT to the whole group (Ctrl-C)'],
  ['npm start', 'leader', 'SIGTERM', 'npm start: SIGTERM to npm\'s own process'],
  ['npm start', 'leader', 'SIGINT', 'npm start: SIGINT to npm\'s own process'],
  ['npm start', 'group', 'SIGINT', 'npm start: SIGINT to the whole group (Ctrl-C)'],
  ['npm start', 'group', 'SIGTERM', 'npm start: SIGTERM to the whole group']
]

const data = await store(t)
const figures: string[] = []
t.teardown(() => { t.comment(`drain on Node ${process.version}:\n${figures.join('\n')}`) })

for (const [how, target, name, what] of cases) {
  t.test(what, async (t) => {
    const running = await launch(how, data.env())
    t.teardown(() => { try { process.kill(-running.leader.pid!, 'SIGKILL') } catch {} })
    const request = await inFlight(running, data.key, `drain-${how.replace(' ', '-')}-${target}-${name}`)
    const sent = Date.now()
    signal(running, target, name)
    await until('the drain to begin', () => running.output().includes('closing: finishing requests in flight') ? true : undefined, 30_000)
    const response = await request.finish()
    const code = await running.exited
    const ms = Date.now() - sent
    t.match(response, /^HTTP\/1\.1 201 /, 'the request in flight is answered')
    t.match(response, /^HTTP\/1\.1 201 [^]*HTTP\/1\.1 503 [^]*"error":"service_unavailable","message":"The instance is shutting down"/, '/readyz answers 503 while draining')
    t.equal(code, 0, `${how} exits 0`)
    t.notMatch(running.output(), /asked again to stop/, 'the copies of the signal were taken as one stop')
    await until('every process of the group to be gone', () => group(running.leader.pid!).length === 0 ? true : undefined, 10_000)
    t.pass('no process is left behind')
    figures.push(`  ${what}: 201, /readyz 503, exit ${String(code)} in ${ms} ms`)
  })
}

t.test('asked again once the first signal was handled: the exit is forced', async (t) => {
  const running = await launch('serve', data.env())
  t.teardown(() => { try { process.kill(-running.leader.pid!, 'SIGKILL') } catch {} })
  const request = await inFlight(running, data.key, 'drain-forced')
  signal(running, 'group', 'SIGTERM')
  await until('the drain to begin', () => running.output().includes('closing: finishing requests in flight') ? true : undefined, 30_000)
  // Past the moment in which copies of the first signal arrive.
  await sleep(SAME_STOP_MS + 200)
  const sent = Date.now()
  signal(running, 'group', 'SIGTERM')
  const code = await running.exited
  const ms = Date.now() - sent
  t.equal(code, 1, 'exit code 1')
  t.match(running.output(), /asked again to stop: exiting now/, 'it says why')
  t.notMatch(await request.finish(), /^HTTP\/1\.1 201 /, 'the request in flight is cut')
  figures.push(`  a second SIGTERM to the group ${SAME_STOP_MS + 200} ms after the first: exit ${String(code)} in ${ms} ms, request cut`)
})
