// storefront catalog import FILE|- and catalog demo: the catalogue, read as a stream.
import { open } from 'node:fs/promises'
import type { Command } from 'commander'
import { CatalogChecker, readCatalog } from '../../lib/catalog-file.ts'
import { JsonStreamError, type JsonStreamEntry } from '../../lib/json-stream.ts'
import { IMPORT_BATCH, importCatalog, type ImportSummary } from '../../services/catalog-import.ts'
import { demoCatalog } from '../../services/demo-catalog.ts'
import { JSON_OPTION, missingArguments, print, UsageError, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'

/** The bytes of a catalogue file, or of stdin for `-`; a file that cannot be read is the operator's to fix. */
async function * catalogBytes (source: string): AsyncGenerator<Buffer> {
  if (source === '-') {
    for await (const chunk of process.stdin) yield chunk as Buffer
    return
  }
  let handle
  try {
    handle = await open(source, 'r')
    if ((await handle.stat()).isDirectory()) throw new Error('it is a directory')
  } catch (err) {
    await handle?.close()
    throw new UsageError(`cannot read ${source}: ${(err as Error).message}`)
  }
  try {
    for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20 })) yield chunk as Buffer
  } catch (err) {
    throw new UsageError(`cannot read ${source}: ${(err as Error).message}`)
  } finally {
    await handle.close()
  }
}

/**
 * The entries of a catalogue file, read as a stream. A file of up to one batch is read and
 * checked whole first, so a small bad file is refused before the database is opened (the
 * embedded one may be in use by a server); a larger one is checked as it is imported, and a
 * problem anywhere rolls the whole import back.
 */
async function readCatalogSource (source: string): Promise<AsyncIterable<JsonStreamEntry>> {
  const entries = readCatalog(catalogBytes(source))
  const head: JsonStreamEntry[] = []
  const checker = new CatalogChecker()
  try {
    while (head.length < IMPORT_BATCH) {
      const next = await entries.next()
      if (next.done) {
        for (const entry of head) checker.check(entry)
        if (!checker.ok) throw checker.error()
        return (async function * () { yield * head })()
      }
      head.push(next.value)
    }
  } catch (err) {
    if (!(err instanceof JsonStreamError)) throw err
    checker.unreadable(err)
    throw checker.error()
  }
  return (async function * () {
    yield * head
    yield * entries
  })()
}

/** `12,345 products read, 4,100 a second` on one line of a terminal, rewritten as it goes. */
function progressLine (): { update: (products: number) => void, clear: () => void } {
  const started = performance.now()
  const format = new Intl.NumberFormat('en')
  let shown = false
  return {
    update: (products) => {
      const seconds = (performance.now() - started) / 1000
      process.stderr.write(`\r\x1b[Kimporting: ${format.format(products)} products read, ${format.format(Math.round(products / Math.max(seconds, 0.001)))} a second`)
      shown = true
    },
    clear: () => { if (shown) process.stderr.write('\r\x1b[K') }
  }
}

function summaryLine (s: ImportSummary): string {
  return `imported ${s.products} products: ${s.created} created, ${s.updated} updated, ${s.unchanged} unchanged, ${s.removed} removed ` +
    `(${s.categories} categories, ${s.brands} brands)`
}

export default function defineCatalog (catalog: Command, { config }: CommandContext): void {
  const catalogImport = catalog.command('import')
    .description('upsert the catalogue from a JSON file by id, in one transaction; a bad file changes nothing')
    .argument('<FILE>', 'the catalogue file, or - for stdin')
    .option('--replace', 'also delete the products the file does not list: the catalogue becomes exactly the file')
    .option(...JSON_OPTION)
    .addHelpText('after', `
The file is read as a stream and written in batches inside one transaction: any size, in
bounded memory. A product imported as it already is stays untouched (its updatedAt too).
While stderr is a terminal a progress line shows the products read and the rate. At the
end one line says how many products were created, updated, unchanged and removed; with
--json, the same as { categories, brands, products, created, updated, unchanged, removed }.
Products removed by --replace take their variants, combinations and discounts with them;
orders keep their items. The file's format is in docs/operators.md (example: examples/catalog.json).`)
    .action(async (source: string, options: Output & { replace?: boolean }) => {
      const entries = await readCatalogSource(source)
      const progress = process.stderr.isTTY ? progressLine() : undefined
      try {
        const summary = await withDatabase(config(), (database) =>
          importCatalog(database, entries, { replace: options.replace === true, onProgress: progress?.update }))
        progress?.clear()
        print(options, summary, summaryLine(summary))
      } catch (err) {
        progress?.clear()
        throw err
      }
    })
  missingArguments.set(catalogImport, 'catalog import needs a FILE, or - for stdin')
  catalog.command('demo')
    .description('load the demo catalogue')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const summary = await withDatabase(config(), (database) => importCatalog(database, demoCatalog()))
      print(options, summary, `loaded the demo catalogue: ${summaryLine(summary).replace(/^imported /, '')}`)
    })
}
