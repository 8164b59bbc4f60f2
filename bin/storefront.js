#!/usr/bin/env node
// The `storefront` command: the TypeScript source through tsx in a checkout, the compiled
// dist/ in a production image (which ships no sources).
import { existsSync } from 'node:fs'

const source = new URL('../cli.ts', import.meta.url)
const cli = existsSync(source)
  ? await (await import('tsx/esm/api')).tsImport(source.href, import.meta.url)
  : await import('../dist/cli.js')
await cli.main(process.argv.slice(2))
