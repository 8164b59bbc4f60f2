#!/usr/bin/env node
// The `storefront` command. It runs the compiled dist/ when that was built from the sources
// as they are now (`npm start` builds it first; the image ships dist/ and no sources), and
// the TypeScript sources through tsx otherwise: a checkout never built or edited since, or
// STOREFRONT_SOURCE=1 (`npm run dev`, `npm run coverage`).
import { hasSources, isBuildCurrent } from './build.js'

const compiled = !hasSources() || (process.env.STOREFRONT_SOURCE !== '1' && isBuildCurrent())
const cli = compiled
  ? await import('../dist/cli/main.js')
  : await (await import('tsx/esm/api')).tsImport(new URL('../cli/main.ts', import.meta.url).href, import.meta.url)
await cli.main(process.argv.slice(2))
