// The server's heap bound, applied by the program however it is started. V8 sizes its old
// space from the machine's memory (some 4 GB here) and collects lazily below that, so a
// server that needs 60 MB live grows past 300 MB of RSS; with the old space capped it
// collects before it grows. The cap is a start-up flag of V8 (it cannot be changed once the
// heap exists), so `storefront serve` started without it runs itself again with it: in place
// where Node can (process.execve, Node ≥ 22.15), else as a child whose signals it relays
// and whose exit it reports as its own. `npm start` asks for the flags first (`--flags`,
// below) and starts the server with them: one process under npm on every Node.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { getHeapStatistics } from 'node:v8'

/** The old space's cap, MB, unless HEAP_LIMIT_MB says otherwise (config.ts declares the same default). */
export const DEFAULT_HEAP_LIMIT_MB = 128
/**
 * The young generation's semi-space, MB, given with the cap. V8's own is 16: at 8 the server's
 * peak RSS over the full benchmark fell by 15–35 MB, with no change in CPU per request
 * beyond the runs' spread (bench/README.md). A semi-space flag of the operator's is kept.
 */
const SEMI_SPACE_MB = 8
/** The young generation V8 adds to the old space's cap in heap_size_limit (3 × a semi-space of at most 16 MB), and some room. */
const YOUNG_GENERATION_MB = 64
const BOUNDED_CHILD = 'STOREFRONT_BOUNDED_CHILD'
const RELAYED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2']

/** HEAP_LIMIT_MB read as config.ts reads it: a whole number of MB, 0 for V8's own sizing. */
export function heapLimitMb (env = process.env) {
  const raw = env.HEAP_LIMIT_MB
  if (raw === undefined || raw.trim() === '') return DEFAULT_HEAP_LIMIT_MB
  const mb = Number(raw)
  if (!Number.isInteger(mb) || mb < 0) throw new Error(`HEAP_LIMIT_MB must be a whole number of MB (0: no cap), got "${raw}"`)
  return mb
}

/** The flags this process was started with: its command line's and NODE_OPTIONS. */
const startFlags = () => [...process.execArgv, process.env.NODE_OPTIONS ?? '']
/** Whether V8 flag `name` is among `flags` (V8 reads `_` and `-` alike). */
const hasFlag = (flags, name) => flags.some((flag) => flag.replaceAll('_', '-').includes(`--${name}`))

/** The V8 flags that bound the heap to `mb` (none for 0), beside the flags `given` already. */
export function heapFlags (mb, given = startFlags()) {
  if (mb === 0) return []
  const semiSpace = hasFlag(given, 'max-semi-space-size') ? [] : [`--max-semi-space-size=${SEMI_SPACE_MB}`]
  return [`--max-old-space-size=${mb}`, ...semiSpace]
}

/**
 * Whether this process needs starting again to be bounded: no cap of its own (a flag in its
 * command or NODE_OPTIONS, which is respected as given) and a heap larger than the bound.
 */
export function needsBound (mb, limitBytes = getHeapStatistics().heap_size_limit, flags = startFlags()) {
  if (hasFlag(flags, 'max-old-space-size')) return false
  return mb !== 0 && limitBytes / 2 ** 20 > mb + YOUNG_GENERATION_MB
}

/**
 * Runs this command again under the bound when it is not bounded yet; resolves with the
 * bounded run's exit code, or null when this process is bounded already (it goes on itself).
 */
export async function runBounded (env = process.env) {
  const mb = heapLimitMb(env)
  if (!needsBound(mb)) return null
  const args = [...process.execArgv, ...heapFlags(mb), ...process.argv.slice(1)]
  if (typeof process.execve === 'function') process.execve(process.execPath, [process.execPath, ...args], env)
  // An IPC channel too: when this process dies without relaying (SIGKILL), the child sees it
  // close and shuts down as on SIGTERM (watchParent), rather than serving on orphaned.
  const child = spawn(process.execPath, args, { stdio: ['inherit', 'inherit', 'inherit', 'ipc'], env: { ...env, [BOUNDED_CHILD]: '1' } })
  const relay = (signal) => { child.kill(signal) }
  for (const signal of RELAYED_SIGNALS) process.on(signal, relay)
  const [code, signal] = await new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (c, s) => resolve([c, s]))
  })
  for (const s of RELAYED_SIGNALS) process.off(s, relay)
  // Died of a signal: so does this process, so whoever started it sees the same end.
  if (signal) process.kill(process.pid, signal)
  return code ?? 1
}

/** In the bounded child: a graceful stop when the process that started it is gone. */
export function watchParent () {
  if (process.env[BOUNDED_CHILD] !== '1' || !process.channel) return
  delete process.env[BOUNDED_CHILD]
  process.channel.unref()
  process.once('disconnect', () => { process.kill(process.pid, 'SIGTERM') })
}

// `node bin/heap.js --flags`: the flags `serve` needs, for a command line that starts the server
// bounded from the first (`npm start`), so that nothing runs it again and, on a Node without
// process.execve, no launcher stays beside it. Nothing when none are needed, or when
// HEAP_LIMIT_MB is invalid: the server itself then says what is wrong with it.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--flags') {
  let flags = []
  try {
    const mb = heapLimitMb()
    if (needsBound(mb)) flags = heapFlags(mb)
  } catch {}
  process.stdout.write(flags.join(' '))
}
