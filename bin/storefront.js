#!/usr/bin/env node
// The `storefront` command. It runs the compiled dist/ when that was built from the sources
// as they are now (`npm start` builds it first; the image ships dist/ and no sources), and
// the TypeScript sources through tsx otherwise: a checkout never built or edited since, or
// STOREFRONT_SOURCE=1 (`npm run dev`, `npm run coverage`). `serve` bounds its own heap
// (bin/heap.js), whichever way it is started.
import { hasSources, isBuildCurrent } from './build.js'
import { runBounded, watchParent } from './heap.js'
import { speedUpModuleFormats } from './module-formats.js'

const bounded = process.argv[2] === 'serve' ? await runBounded().catch((err) => { process.stderr.write(`storefront: ${err.message}\n`); return 2 }) : null
if (bounded !== null) {
  process.exitCode = bounded
} else {
  watchParent()
  const compiled = !hasSources() || (process.env.STOREFRONT_SOURCE !== '1' && isBuildCurrent())
  if (compiled) speedUpModuleFormats()
  const cli = compiled
    ? await import('../dist/cli/main.js')
    : await (await import('tsx/esm/api')).tsImport(new URL('../cli/main.ts', import.meta.url).href, import.meta.url)
  await cli.main(process.argv.slice(2))
}
