// The embedded database's modules (PGlite and Drizzle's driver for it) are loaded only when an
// embedded database is opened: on PostgreSQL they would take memory for nothing (their import
// alone: 3 MB of RSS on Node 20, 7 on the image's Node 24). A child process refuses to resolve
// any of them, loads db/client.ts, the app and the command, then opens an embedded database,
// which must ask for them.
import { spawnSync } from 'node:child_process'
import t from 'tap'

const root = new URL('../..', import.meta.url).pathname
const refuse = 'data:text/javascript,export async function resolve (specifier, context, next) {' +
  ' if (specifier.includes("pglite")) throw new Error("resolved " + specifier); return next(specifier, context) }'
const script = `
import { register } from 'node:module'
register(${JSON.stringify(refuse)})
const { openDatabase } = await import('./db/client.ts')
await import('./app.ts')
await import('./cli/main.ts')
let embedded = null
try { await openDatabase({}) } catch (err) { embedded = err.message }
process.stdout.write(JSON.stringify({ embedded }))
`

t.test('loading the command loads no module of the embedded database; opening one does', async (t) => {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })
  t.equal(child.status, 0, `the command's modules loaded without PGlite: ${child.stderr.slice(0, 500)}`)
  const { embedded } = JSON.parse(child.stdout || '{}') as { embedded?: string | null }
  t.match(embedded, /resolved @electric-sql\/pglite/, 'opening an embedded database asks for PGlite')
})
