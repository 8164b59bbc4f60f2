// `npm run bench:commands [-- --runs 7] [--source]`
//
// How fast the operator's commands start: `storefront --version`, `--help`, and `keys list`
// and `keys create` against PostgreSQL, each run --runs times (5 by default) as an operator
// runs it (`node bin/storefront.js …`, the compiled dist/ that `npm start` builds and the
// image ships; --source: the TypeScript sources through tsx as well). Prints the median wall
// time and CPU time (user + system, which a busy machine inflates less than the wall) of
// each, next to a bare `node -e 0` measured the same way, and the load average before and
// after: figures from a shared machine are read against that baseline. It prints figures
// and asserts nothing: a timed test would fail whenever the machine is busy.
//
// PostgreSQL: a fresh database `sf_bench_<random>` on the server of BENCH_DATABASE_URL,
// TEST_DATABASE_URL or DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres by
// default), migrated by `storefront migrate`, dropped at the end.
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'

const root = fileURLToPath(new URL('..', import.meta.url))
const BIN = fileURLToPath(new URL('../bin/storefront.js', import.meta.url))
const args = process.argv.slice(2)
const runs = Number(args[args.indexOf('--runs') + 1]) || 5
const withSource = args.includes('--source')

interface Sample { wall: number, cpu: number }

/** One run of `command`, timed by bash's `time` (wall, user and system time of the whole process tree). */
function time (command: string[], env: Record<string, string>): Sample {
  const result = spawnSync('bash', ['-c', 'TIMEFORMAT="%R %U %S"; { time "$@" >/dev/null 2>&1; } 2>&1', 'bash', ...command], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    encoding: 'utf8'
  })
  const [wall, user, system] = result.stdout.trim().split('\n').at(-1)!.split(' ').map(Number)
  if (result.status !== 0 || wall === undefined || user === undefined || system === undefined) throw new Error(`${command.join(' ')} failed: ${result.stdout}${result.stderr}`)
  return { wall: wall * 1000, cpu: (user + system) * 1000 }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

function measure (name: string, command: string[], env: Record<string, string> = {}): string {
  time(command, env) // warm the file cache
  const samples = Array.from({ length: runs }, () => time(command, env))
  return `${name.padEnd(48)} ${median(samples.map((s) => s.cpu)).toFixed(0).padStart(6)} ms CPU ${median(samples.map((s) => s.wall)).toFixed(0).padStart(6)} ms wall`
}

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const name = `sf_bench_${randomBytes(4).toString('hex')}`
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database "${name}"`)
const url = new URL(adminUrl)
url.pathname = `/${name}`
const database = { DATABASE_URL: url.href, LOG_LEVEL: 'warn' }
try {
  execFileSync(process.execPath, [BIN.replace('storefront.js', 'build.js'), '--if-stale'], { cwd: root, stdio: 'inherit' })
  execFileSync(process.execPath, [BIN, 'migrate'], { env: { ...process.env, ...database }, stdio: 'ignore' })
  const before = loadavg()
  const lines = [measure('node -e 0 (bare Node, the baseline)', [process.execPath, '-e', '0'])]
  for (const [mode, env] of [['compiled', {}], ...(withSource ? [['tsx', { STOREFRONT_SOURCE: '1' }]] : [])] as Array<[string, Record<string, string>]>) {
    const storefront = (...rest: string[]) => [process.execPath, BIN, ...rest]
    lines.push(
      measure(`storefront --version (${mode})`, storefront('--version'), env),
      measure(`storefront --help (${mode})`, storefront('--help'), env),
      measure(`storefront keys list (${mode}, PostgreSQL)`, storefront('keys', 'list'), { ...env, ...database }),
      measure(`storefront keys create (${mode}, PostgreSQL)`, storefront('keys', 'create', '--name', 'bench', '--scopes', 'products:list'), { ...env, ...database })
    )
  }
  const after = loadavg()
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ')
  console.log(`Command start on Node ${process.version}, median of ${runs} runs each`)
  console.log(`load average before: ${load(before)}, after: ${load(after)}`)
  for (const line of lines) console.log(line)
} finally {
  await admin.unsafe(`drop database if exists "${name}" with (force)`)
  await admin.end()
}
