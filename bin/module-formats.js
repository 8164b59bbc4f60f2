// A start-up cost of Node 24 and 26 (the image's Node): to learn whether a .js file is an ES
// module, their loader reads the nearest package.json and turns all of it into objects again
// for every file it loads (Node 20 keeps the result). drizzle-orm's package.json is 175 KB of
// "exports" and the package has some 200 files, so importing it costs over a second there
// (0.1 s on Node 20): most of what `storefront keys list` and the server's start spend. A
// resolve hook answers the question for the relative imports between .js files, which are
// all those files make, from one read of each package.json, kept; everything else (bare
// names, other extensions, a scope without "type": "module") goes to Node's own resolution.
import { readFileSync, realpathSync, statSync } from 'node:fs'
import module from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const scopes = new Map()

/** Whether the nearest package.json above `dir` says "type": "module"; each folder is looked at once. */
export function isModuleScope (dir) {
  let known = scopes.get(dir)
  if (known === undefined) {
    let manifest
    try {
      manifest = readFileSync(join(dir, 'package.json'), 'utf8')
    } catch {}
    if (manifest !== undefined) {
      try {
        known = JSON.parse(manifest).type === 'module'
      } catch {
        known = false
      }
    } else {
      const parent = dirname(dir)
      known = parent !== dir && isModuleScope(parent)
    }
    scopes.set(dir, known)
  }
  return known
}

/** The resolve hook: `./x.js` or `../x.js` from a file in a "type": "module" scope is that file, an ES module. */
export function resolveModuleFormat (specifier, context, nextResolve) {
  const parent = context.parentURL
  if ((specifier.startsWith('./') || specifier.startsWith('../')) && specifier.endsWith('.js') && parent?.startsWith('file:')) {
    let path
    try {
      // Where the file really is, as Node would resolve it: one module per file.
      path = realpathSync(fileURLToPath(new URL(specifier, parent)))
    } catch {}
    // A missing file or a folder is left to Node, which refuses it with its own error.
    if (path !== undefined && isModuleScope(dirname(path)) && statSync(path).isFile()) {
      return { url: pathToFileURL(path).href, format: 'module', shortCircuit: true }
    }
  }
  return nextResolve(specifier, context)
}

/** Installs the hook where Node has synchronous module hooks (22.15 and later); nothing on Node 20. */
export function speedUpModuleFormats () {
  if (typeof module.registerHooks === 'function') module.registerHooks({ resolve: resolveModuleFormat })
}
