// `npx tsx bench/profile-summary.ts DIR [--top 10] [--only product,list]`
//
// Sums the self time of the app's V8 CPU profiles (`npm run bench -- --profile DIR`) by
// function, by file and by package, for each scenario's measured load: run.ts writes
// DIR/scenario-windows.json with when each load ran, on the clock V8's profiles use
// (CLOCK_MONOTONIC), and the samples that fall in a window are that scenario's. A sample's
// self time is the time to the next sample. Percentages are of the window's busy time
// (samples that are not `(idle)`); `(program)` is V8 and native work not attributed to a
// JavaScript function, `(garbage collector)` GC.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

interface CallFrame { functionName: string, url: string, lineNumber: number, columnNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame }
interface CpuProfile { nodes: ProfileNode[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }
interface ProfileWindow { run: number, appPid: number, scenario: string, startUs: number, endUs: number }

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '10' }, only: { type: 'string' } }
})
const dir = positionals[0]
if (!dir) {
  process.stderr.write('usage: npx tsx bench/profile-summary.ts DIR [--top 10] [--only product,list]\n')
  process.exit(2)
}
const top = Number(args.top)
const only = args.only ? new Set(args.only.split(',').map((s) => s.trim())) : undefined

const windows = JSON.parse(readFileSync(join(dir, 'scenario-windows.json'), 'utf8')) as ProfileWindow[]
const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))

/** Where a function lives: the app's own file, a package (and its file), or Node's internals. */
function place (url: string): { file: string, pkg: string } {
  if (url === '') return { file: '(native)', pkg: '(native)' }
  const path = url.replace(/^file:\/\//, '')
  // The bench compiles the app under node_modules/.cache/storefront-bench-<pid>/ (bench/build.ts).
  const app = /\/node_modules\/\.cache\/storefront-bench-\d+\/(.*)$/.exec(path)
  if (app) return { file: app[1]!, pkg: `app: ${app[1]!.split('/')[0]!.endsWith('.js') ? app[1]! : app[1]!.split('/')[0]!}` }
  const at = path.lastIndexOf('/node_modules/')
  if (at >= 0) {
    const rest = path.slice(at + '/node_modules/'.length)
    const parts = rest.split('/')
    const pkg = parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!
    return { file: rest, pkg }
  }
  if (path.startsWith('node:')) return { file: path, pkg: 'node (internals)' }
  return { file: path, pkg: path }
}

interface Totals { busyUs: number, idleUs: number, byFunction: Map<string, number>, byFile: Map<string, number>, byPackage: Map<string, number> }
const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us)

const totals = new Map<string, Totals>()
const totalsOf = (scenario: string) => {
  let t = totals.get(scenario)
  if (!t) totals.set(scenario, t = { busyUs: 0, idleUs: 0, byFunction: new Map(), byFile: new Map(), byPackage: new Map() })
  return t
}

for (const name of profiles) {
  // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
  const pid = Number(name.split('.')[3])
  const mine = windows.filter((w) => w.appPid === pid && (!only || only.has(w.scenario)))
  if (mine.length === 0) continue
  const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile
  const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]))
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!
    const self = i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1]! : 0
    const window = mine.find((w) => t >= w.startUs && t < w.endUs)
    if (!window || self <= 0) continue
    const frame = nodes.get(profile.samples[i]!)!
    const scenario = totalsOf(window.scenario)
    if (frame.functionName === '(idle)') {
      scenario.idleUs += self
      continue
    }
    scenario.busyUs += self
    const { file, pkg } = place(frame.url)
    const fn = frame.url === '' ? frame.functionName : `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`
    add(scenario.byFunction, fn, self)
    add(scenario.byFile, frame.url === '' ? frame.functionName : file, self)
    add(scenario.byPackage, frame.url === '' ? frame.functionName : pkg, self)
  }
}

const pct = (us: number, of: number) => `${((100 * us) / Math.max(of, 1)).toFixed(1).padStart(5)}%`
const msOf = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`
function table (title: string, map: Map<string, number>, busy: number) {
  process.stdout.write(`  ${title}\n`)
  for (const [key, us] of [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`    ${pct(us, busy)} ${msOf(us)}  ${key}\n`)
}

const order = [...new Set(windows.map((w) => w.scenario))]
for (const scenario of order) {
  const t = totals.get(scenario)
  if (!t) continue
  const runs = new Set(windows.filter((w) => w.scenario === scenario).map((w) => w.run)).size
  process.stdout.write(`\n${scenario}: ${(t.busyUs / 1e6).toFixed(1)} s busy, ${(t.idleUs / 1e6).toFixed(1)} s idle in the app's process over ${runs} run${runs > 1 ? 's' : ''}\n`)
  table(`top ${top} functions by self time`, t.byFunction, t.busyUs)
  table(`top ${top} files`, t.byFile, t.busyUs)
  table(`top ${top} packages (app: the app's own code by folder)`, t.byPackage, t.busyUs)
}
if (totals.size === 0) process.stdout.write(`no samples of ${dir}'s profiles fall in the windows of scenario-windows.json (profiles: ${profiles.length})\n`)
