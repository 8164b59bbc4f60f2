// The servers a benchmark runs, each in a child process of its own, and the memory they use
// as the kernel counts it (/proc/<pid>/status: VmRSS now, VmHWM the peak).
import { fork, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { heapFlags, heapLimitMb } from '../bin/heap.js'
import type { Product, ProductPage } from '../schemas/products.ts'
import type { CatalogOptions } from './catalog.ts'
import type { SeededFeed } from './feed.ts'

export interface AppServerOptions {
  /** postgres:// URL of a database already migrated and filled; absent means an in-memory PGlite. */
  databaseUrl?: string
  key?: string
  /** The app's PostgreSQL pool size; absent: the app's default, as `storefront serve` opens it. */
  poolSize?: number
  /** With PGlite: the catalogue the server generates and imports before serving, and the changes feed's events (0: none). */
  seed?: CatalogOptions & { analyze: boolean, events: number }
  /** Settings beside the bench's own (e.g. WEBHOOK_DELIVERY), as the environment would give them. */
  config?: Record<string, string>
}
export type FromAppServer = { type: 'seeded', importMs: number, feed?: SeededFeed } | { type: 'ready', port: number, key: string }

/**
 * What the bare server answers: product JSON by id, a product page, and (when orders are
 * loaded) an orders page; with `databaseUrl`, also the pre-rendered JSON kept there (bench/rendered.ts).
 */
export interface BareServerData { products: Product[], page: ProductPage, ordersPage?: unknown, databaseUrl?: string }
export type FromBareServer = { type: 'waiting' } | { type: 'ready', port: number }

export interface Server {
  name: string
  child: ChildProcess
  baseUrl: string
  stop: () => Promise<void>
}

/** Where the server processes' code comes from: compiled JavaScript (see build.ts), or the TypeScript through tsx. */
export interface Runtime {
  compiledDir?: string
  /** Write a V8 CPU profile of the process here when it exits. */
  profileDir?: string | undefined
}

/**
 * The V8 flags `storefront serve` gives itself however it is started (bin/heap.js: the heap
 * cap of HEAP_LIMIT_MB), for an app server on PostgreSQL; with PGlite the database and its
 * fill live in the process, so none. BENCH_APP_NODE_ARGS (space-separated) replaces them, to try others.
 */
export function serveNodeFlags (onPostgres: boolean): string[] {
  if (process.env.BENCH_APP_NODE_ARGS !== undefined) return process.env.BENCH_APP_NODE_ARGS.split(' ').filter(Boolean)
  if (!onPostgres) return []
  return heapFlags(heapLimitMb(process.env))
}

function start (runtime: Runtime, name: string, args: string[], nodeFlags: string[] = []): ChildProcess {
  const file = runtime.compiledDir
    ? join(runtime.compiledDir, 'bench', `${name}.js`)
    : fileURLToPath(new URL(`./${name}.ts`, import.meta.url))
  // Under tsx the parent's execArgv carries tsx's loader. --expose-gc lets the app server
  // collect what seeding left before its peak memory is measured.
  return fork(file, args, {
    execArgv: [
      ...(runtime.compiledDir ? [] : process.execArgv),
      '--expose-gc',
      ...nodeFlags,
      ...(runtime.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${runtime.profileDir}`] : [])
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
}

function nextMessage<T> (child: ChildProcess, accept: (m: T) => boolean): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: T) => {
      if (!accept(message)) return
      cleanup()
      resolve(message)
    }
    const onExit = (code: number | null) => {
      cleanup()
      reject(new Error(`the server process exited (code ${code}) before it was ready`))
    }
    const cleanup = () => {
      child.off('message', onMessage)
      child.off('exit', onExit)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

function stopper (child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.send({ type: 'stop' })
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
}

/** The bare server runs with Node's defaults; BENCH_BARE_NODE_ARGS (space-separated) gives it flags, to trace a ceiling as the app. */
const bareNodeFlags = (): string[] => (process.env.BENCH_BARE_NODE_ARGS ?? '').split(' ').filter(Boolean)

/** The compiled app server loads its modules as `storefront serve` does (bench/module-hooks.ts). */
const moduleHookFlags = (runtime: Runtime): string[] =>
  runtime.compiledDir ? ['--import', pathToFileURL(join(runtime.compiledDir, 'bench', 'module-hooks.js')).href] : []

export async function startAppServer (runtime: Runtime, options: AppServerOptions, onSeeded?: (seeded: Extract<FromAppServer, { type: 'seeded' }>) => void) {
  const child = start(runtime, 'app-server', [JSON.stringify(options)], [...serveNodeFlags(options.databaseUrl !== undefined), ...moduleHookFlags(runtime)])
  child.on('message', (m: FromAppServer) => { if (m.type === 'seeded') onSeeded?.(m) })
  try {
    const ready = await nextMessage<FromAppServer>(child, (m) => m.type === 'ready') as Extract<FromAppServer, { type: 'ready' }>
    const server: Server = { name: 'app', child, baseUrl: `http://127.0.0.1:${ready.port}`, stop: stopper(child) }
    return { server, key: ready.key }
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  }
}

export async function startBareServer (runtime: Runtime, data: BareServerData): Promise<Server> {
  const child = start(runtime, 'bare-server', [], bareNodeFlags())
  try {
    await nextMessage<FromBareServer>(child, (m) => m.type === 'waiting')
    child.send(data)
    const ready = await nextMessage<FromBareServer>(child, (m) => m.type === 'ready') as Extract<FromBareServer, { type: 'ready' }>
    return { name: 'bare', child, baseUrl: `http://127.0.0.1:${ready.port}`, stop: stopper(child) }
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  }
}

/** VmRSS and VmHWM (peak since start or the last reset) of a process, in bytes. */
export function memoryOf (pid: number): { rss: number, peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return { rss: kb('VmRSS'), peak: kb('VmHWM') }
}

/** CPU time (user + system) a process has used, in milliseconds (Linux counts in 1/100 s). */
export function cpuTimeOf (pid: number): number {
  // Fields after the command name, which is in parentheses and may hold spaces.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** Restarts this process's VmHWM at its current RSS (Linux: "5" to clear_refs); best effort. */
export function resetPeakMemory (): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5')
  } catch {
    // Not Linux, or not allowed: the peak then includes the start-up.
  }
}

/**
 * CPU time PostgreSQL's backends of one database spend (the local server only: it reads
 * /proc), sampled every `everyMs` so that backends which come and go (pgbench's) are
 * counted too; what a backend spends after the last sample before it exits is missed.
 * `sample` lists the backends' pids.
 */
export function backendCpu (sample: () => Promise<number[]>, everyMs = 200) {
  const sampler = backendCpuByPhase(sample, () => 'all', everyMs)
  return {
    start: sampler.start,
    /** Milliseconds of CPU since start. */
    stop: async (): Promise<number> => (await sampler.stop()).get('all') ?? 0
  }
}

/**
 * backendCpu split by phase: each sample's CPU since the one before counts for the phase
 * `phaseOf()` names when it is taken (so a phase's edges are off by up to `everyMs`).
 */
export function backendCpuByPhase (sample: () => Promise<number[]>, phaseOf: () => string, everyMs = 50) {
  const last = new Map<number, number>()
  const byPhase = new Map<string, number>()
  let started = false
  const read = async () => {
    const phase = phaseOf()
    for (const pid of await sample()) {
      let cpu: number
      try {
        cpu = cpuTimeOf(pid)
      } catch {
        continue
      }
      // A backend first seen after the start counts from its own start.
      const before = last.get(pid) ?? (started ? 0 : cpu)
      last.set(pid, cpu)
      if (cpu > before) byPhase.set(phase, (byPhase.get(phase) ?? 0) + cpu - before)
    }
  }
  let timer: NodeJS.Timeout | undefined
  let pending: Promise<void> = Promise.resolve()
  return {
    start: async () => {
      await read()
      started = true
      timer = setInterval(() => { pending = pending.then(read).catch(() => {}) }, everyMs)
    },
    /** Milliseconds of CPU since start, by phase. */
    stop: async (): Promise<Map<string, number>> => {
      clearInterval(timer)
      await pending
      await read().catch(() => {})
      return byPhase
    }
  }
}

/** Messages of the webhook receivers' process (bench/receivers.ts). */
export type ToReceivers = { type: 'counts' | 'report' | 'stop' }
/** One receiver's deliveries in arrival order: the event's feed position (webhook-id evt_<n>) and when it came, ms since the epoch. */
export interface ReceiverLog { positions: number[], times: number[], malformed: number }
export type FromReceivers = { type: 'ready', ports: number[] } | { type: 'counts', counts: number[] } | { type: 'report', received: ReceiverLog[] }

export interface Receivers {
  child: ChildProcess
  ports: number[]
  /** Deliveries each receiver has had so far. */
  counts: () => Promise<number[]>
  /** Every delivery each receiver has had. */
  report: () => Promise<ReceiverLog[]>
  stop: () => Promise<void>
}

/** `count` webhook receivers on as many ports, in one child process (bench/receivers.ts). */
export async function startReceivers (runtime: Runtime, count: number): Promise<Receivers> {
  const child = start({ ...(runtime.compiledDir ? { compiledDir: runtime.compiledDir } : {}) }, 'receivers', [String(count)])
  try {
    const ready = await nextMessage<FromReceivers>(child, (m) => m.type === 'ready') as Extract<FromReceivers, { type: 'ready' }>
    const ask = async <T extends FromReceivers['type']>(type: T & ToReceivers['type']) => {
      const answer = nextMessage<FromReceivers>(child, (m) => m.type === type)
      child.send({ type } satisfies ToReceivers)
      return await answer as Extract<FromReceivers, { type: T }>
    }
    return {
      child,
      ports: ready.ports,
      counts: async () => (await ask('counts')).counts,
      report: async () => (await ask('report')).received,
      stop: stopper(child)
    }
  } catch (err) {
    child.kill('SIGKILL')
    throw err
  }
}
