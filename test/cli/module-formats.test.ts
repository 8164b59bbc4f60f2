// The resolve hook that spares Node 24 and 26 re-reading a package's whole package.json for
// every ES module file (bin/module-formats.js): it answers only what it knows for certain and
// leaves everything else to Node.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { isModuleScope, resolveModuleFormat } from '../../bin/module-formats.js'

const root = mkdtempSync(join(tmpdir(), 'sf-formats-'))
t.teardown(() => rmSync(root, { recursive: true, force: true }))
const file = (path: string, text = '') => {
  mkdirSync(join(root, path, '..'), { recursive: true })
  writeFileSync(join(root, path), text)
}
file('esm/package.json', '{"name":"esm","type":"module"}')
file('esm/lib/a.js', 'export const a = 1')
file('esm/lib/deep/b.js', 'export const b = 2')
file('esm/cjs/package.json', '{"type":"commonjs"}')
file('esm/cjs/c.js', 'exports.c = 3')
file('esm/plain/package.json', '{"name":"no-type"}')
file('esm/plain/d.js', 'export const d = 4')
file('esm/broken/package.json', '{ not json')
file('esm/broken/e.js', '')
mkdirSync(join(root, 'esm/folder.js'))
symlinkSync(join(root, 'esm/lib/a.js'), join(root, 'esm/lib/link.js'))

t.test('the scope of a folder: the nearest package.json, "type": "module" or not', async (t) => {
  t.equal(isModuleScope(join(root, 'esm/lib/deep')), true, 'a folder without package.json takes its parent\'s')
  t.equal(isModuleScope(join(root, 'esm/cjs')), false, '"type": "commonjs"')
  t.equal(isModuleScope(join(root, 'esm/plain')), false, 'no "type": not known to be ES modules (Node may still detect them)')
  t.equal(isModuleScope(join(root, 'esm/broken')), false, 'an unreadable package.json is Node\'s to report')
})

t.test('the hook answers relative .js imports in a module scope, and passes everything else on', async (t) => {
  const parentURL = pathToFileURL(join(root, 'esm/lib/a.js')).href
  const passed: string[] = []
  const next = (specifier: string) => { passed.push(specifier); return { url: `next:${specifier}` } }
  const resolve = (specifier: string) => resolveModuleFormat(specifier, { parentURL, conditions: [], importAttributes: {} }, next)
  t.strictSame(resolve('./deep/b.js'), { url: pathToFileURL(join(root, 'esm/lib/deep/b.js')).href, format: 'module', shortCircuit: true })
  t.strictSame(resolve('../lib/a.js'), { url: parentURL, format: 'module', shortCircuit: true })
  t.strictSame(resolve('./link.js'), { url: parentURL, format: 'module', shortCircuit: true }, 'a link resolves to the file itself, as Node does')
  for (const specifier of ['../cjs/c.js', '../plain/d.js', '../broken/e.js', './missing.js', '../folder.js', 'drizzle-orm', './a.mjs', './a.js?x', 'node:fs']) {
    t.strictSame(resolve(specifier), { url: `next:${specifier}` }, `${specifier}: Node resolves it`)
  }
  t.strictSame(passed, ['../cjs/c.js', '../plain/d.js', '../broken/e.js', './missing.js', '../folder.js', 'drizzle-orm', './a.mjs', './a.js?x', 'node:fs'])
})

t.test('with the hook installed, a package loads as it does without it', async (t) => {
  const script = `
    const { speedUpModuleFormats } = await import(${JSON.stringify(pathToFileURL(join(process.cwd(), 'bin/module-formats.js')).href)})
    if (process.argv[1] === 'hooked') speedUpModuleFormats()
    const pg = await import('drizzle-orm/pg-core')
    const { drizzle } = await import('drizzle-orm/postgres-js')
    console.log(JSON.stringify([Object.keys(pg).length, typeof pg.pgTable, typeof drizzle]))`
  const run = (mode: string) => execFileSync(process.execPath, ['--input-type=module', '-e', script, mode], { encoding: 'utf8' })
  const plain = run('plain')
  t.match(plain, /^\[\d+,"function","function"\]\n$/)
  t.equal(run('hooked'), plain, 'the same exports')
})
