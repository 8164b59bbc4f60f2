#!/usr/bin/env node
// Compiles the TypeScript sources into dist/ (`npm run build`); with --if-stale, only when
// dist/ was not built from the sources as they are now (`npm start` runs that first, so a
// fresh clone, a pull or an edit is built before it serves, and an unchanged tree starts at
// once). The sources' fingerprint is written into dist/ last, so a build that stopped
// halfway counts as stale; the new dist/ replaces the old one only when it is complete.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const STAMP = '.source-hash'

/** Every file the build reads: tsconfig.build.json's `include` (root `*.ts` and whole folders) less its `exclude`, and the configurations. */
function sourceFiles (root) {
  const config = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'))
  const excluded = new Set(config.exclude ?? [])
  const files = ['tsconfig.json', 'tsconfig.build.json']
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else files.push(path)
    }
  }
  for (const pattern of config.include ?? []) {
    if (pattern === '*.ts') {
      files.push(...readdirSync(root).filter((name) => name.endsWith('.ts') && !excluded.has(name)))
    } else if (existsSync(join(root, pattern))) {
      walk(pattern)
    }
  }
  return files.sort()
}

/** A fingerprint of the sources: paths and contents. */
export function sourceHash (root = ROOT) {
  const hash = createHash('sha256')
  for (const file of sourceFiles(root)) hash.update(`${file}\0`).update(readFileSync(join(root, file))).update('\0')
  return hash.digest('hex')
}

/** Whether the tree holds its TypeScript sources (a checkout; the image ships dist/ only). */
export function hasSources (root = ROOT) {
  return existsSync(join(root, 'cli', 'main.ts'))
}

/** Whether dist/ was built from the sources as they are now. */
export function isBuildCurrent (root = ROOT) {
  try {
    return readFileSync(join(root, 'dist', STAMP), 'utf8') === sourceHash(root)
  } catch {
    return false
  }
}

export function build (root = ROOT) {
  const hash = sourceHash(root)
  const next = join(root, `dist.building-${process.pid}`)
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  rmSync(next, { recursive: true, force: true })
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', next], { cwd: root, stdio: 'inherit' })
    // The migrations are read at run time, beside the compiled db/client.js.
    cpSync(join(root, 'db/migrations'), join(next, 'db/migrations'), { recursive: true })
    writeFileSync(join(next, STAMP), hash)
    rmSync(join(root, 'dist'), { recursive: true, force: true })
    renameSync(next, join(root, 'dist'))
  } finally {
    rmSync(next, { recursive: true, force: true })
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const ifStale = process.argv.includes('--if-stale')
  if (!hasSources()) {
    if (!ifStale) {
      console.error('storefront build: no TypeScript sources here (cli/main.ts): nothing to build')
      process.exitCode = 1
    }
  } else if (ifStale && isBuildCurrent()) {
    // Up to date: nothing to say, the server starts at once.
  } else {
    if (ifStale) console.error('storefront build: dist/ is missing or older than the sources; compiling (about 20 s)…')
    try {
      build()
    } catch {
      // tsc printed its errors.
      console.error('storefront build: the TypeScript sources did not compile')
      process.exitCode = 1
    }
  }
}
