// Compiles the app and the bench's server processes to plain JavaScript, so the servers run
// as in production (`npm run build`, no tsx loader: tsx alone adds ~70 MB of RSS).
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const root = fileURLToPath(new URL('..', import.meta.url))

/** Compiles into a fresh directory under node_modules/.cache (so packages resolve); returns it and its remover. */
export async function compileForBench (): Promise<{ dir: string, remove: () => void }> {
  const dir = join(root, 'node_modules', '.cache', `storefront-bench-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const remove = () => rmSync(dir, { recursive: true, force: true })
  const at = (...paths: string[]) => paths.map((p) => join(root, p))
  const config = join(dir, 'tsconfig.json')
  writeFileSync(config, JSON.stringify({
    extends: join(root, 'tsconfig.build.json'),
    // Emit only: `npm run typecheck` is where types are checked.
    compilerOptions: { outDir: dir, rootDir: root, sourceMap: false, noEmitOnError: false, noCheck: true },
    include: at('*.ts', 'plugins', 'routes', 'db', 'schemas', 'lib', 'bench'),
    exclude: at('node_modules', 'dist', 'data', 'test', 'scripts', 'drizzle.config.ts')
  }))
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  // Type errors elsewhere in the checkout must not stop a benchmark: tsc still emits.
  await promisify(execFile)(process.execPath, [tsc, '-p', config], { maxBuffer: 16 * 1024 * 1024 }).catch(() => {})
  if (!existsSync(join(dir, 'bench', 'app-server.js'))) {
    remove()
    throw new Error('compiling the app for the benchmark failed; run `npx tsc -p tsconfig.build.json` to see why, or use --tsx')
  }
  // Outside the project's package scope (under node_modules), so say the output is ESM.
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  cpSync(join(root, 'db', 'migrations'), join(dir, 'db', 'migrations'), { recursive: true })
  // The heap bound `serve` applies itself and the module-format hook it installs (bench/processes.ts starts the app server with both).
  for (const file of ['heap.js', 'module-formats.js']) cpSync(join(root, 'bin', file), join(dir, 'bin', file))
  return { dir, remove }
}
