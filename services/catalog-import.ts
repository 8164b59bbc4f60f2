// Importing a catalogue, whoever asks (`storefront catalog import`, `catalog demo`, the demo
// store's first start), in two phases. First the whole file is read and each item checked on
// its own (lib/catalog-file.ts), the valid ones kept in a spool on disk: a file of any length
// in bounded memory, and no lock held however slowly it arrives. A bad file changes nothing
// and its error lists every problem. Then one transaction writes it, one import at a time
// across the fleet: it works out what changes, locks those products in the stock's lock order
// (db/stock.ts), writes the rows in batches (db/catalog.ts) and sets the file's stock through
// the stock owner (services/stock.ts), which takes the active holds from it again and renders
// the documents last.
import { analyzeCatalog, CatalogWriter, IMPORT_BATCH, lockCatalogImports, planImport, type SpooledItem, type WriterOptions } from '../db/catalog.ts'
import type { Database } from '../db/client.ts'
import { renumberProducts } from '../db/products.ts'
import { resetCatalog } from '../db/settings.ts'
import { CatalogChecker, catalogEntries } from '../lib/catalog-file.ts'
import { jsonHash } from '../lib/json-hash.ts'
import { JsonStreamError, type JsonStreamEntry } from '../lib/json-stream.ts'
import { Spool } from '../lib/spool.ts'
import type { CatalogFile } from '../schemas/catalog-file.ts'
import { StockKeeper, type Shelf } from './stock.ts'

export { IMPORT_BATCH } from '../db/catalog.ts'

export interface ImportOptions extends WriterOptions {
  /** Called as the file is read and checked, every batch of products and at its end, with the products read so far. */
  onProgress?: (products: number) => void
}

export interface ImportSummary {
  /** Items in the file. */
  categories: number
  brands: number
  products: number
  /** What happened to the products: new, changed, left as they were, deleted (with `replace`). */
  created: number
  updated: number
  unchanged: number
  removed: number
}

/** A catalogue in memory, or the entries of one being read (lib/catalog-file.ts `readCatalog`). */
export type CatalogSource = CatalogFile | Iterable<JsonStreamEntry> | AsyncIterable<JsonStreamEntry>

function isEntries (source: CatalogSource): source is Iterable<JsonStreamEntry> | AsyncIterable<JsonStreamEntry> {
  return Symbol.asyncIterator in source || Symbol.iterator in source
}

export async function importCatalog (database: Database, source: CatalogSource, options: ImportOptions = {}): Promise<ImportSummary> {
  const checker = new CatalogChecker()
  const spool = await Spool.create<SpooledItem>('storefront-import')
  try {
    await readInto(spool, checker, isEntries(source) ? source : catalogEntries(source), options)
    const counts = await new StockKeeper(database).run((shelf) => writeCatalog(shelf, spool, checker, options))
    // Every committed import, even one that changed no product: category and brand names may
    // have. Every instance drops its whole cache (per-product freshness is for orders and the sweep).
    await resetCatalog(database.db)
    if (counts.created + counts.updated + counts.removed > 0) {
      // Fresh statistics for the planner at once: PGlite never runs autovacuum, and PostgreSQL's
      // may come minutes later, while a new catalogue without them plans list queries badly.
      await analyzeCatalog(database.db)
    }
    return { ...checker.counts, ...counts }
  } finally {
    await spool.remove()
  }
}

/** Phase one: every item checked, the valid ones spooled; throws the file's problems, if it has any. */
async function readInto (spool: Spool<SpooledItem>, checker: CatalogChecker, entries: Iterable<JsonStreamEntry> | AsyncIterable<JsonStreamEntry>, options: ImportOptions): Promise<void> {
  const every = options.batchSize ?? IMPORT_BATCH
  try {
    for await (const entry of entries) {
      const item = checker.check(entry)
      // After the first problem nothing is kept (nothing will be written), but the rest of
      // the file is still checked, so one run lists every problem.
      if (item && checker.ok) await spool.add(item.section === 'products' ? { ...item, hash: jsonHash(item.item) } : item)
      if (item?.section === 'products' && checker.counts.products % every === 0) options.onProgress?.(checker.counts.products)
    }
  } catch (err) {
    if (!(err instanceof JsonStreamError)) throw err
    checker.unreadable(err)
  }
  if (!checker.ok) throw checker.error()
  if (checker.counts.products % every !== 0) options.onProgress?.(checker.counts.products)
  await spool.close()
}

/** Phase two, in the stock write's transaction; may run again from the spool after contention. */
async function writeCatalog (shelf: Shelf, spool: Spool<SpooledItem>, checker: CatalogChecker, options: ImportOptions) {
  const { tx, now } = shelf
  // Two imports never interleave their writes; only imports wait for this lock.
  await lockCatalogImports(tx)
  const plan = await planImport(tx, spool.values(), options)
  // What it rewrites, deletes or takes children from, in id order, before any write.
  await shelf.lock([...plan.changed, ...plan.removed, ...plan.donors], { forDelete: true })
  const writer = new CatalogWriter(tx, checker, now, options, {
    plan,
    onStock: async (stock, created) => {
      shelf.locks.adoptCreated(created)
      await shelf.importStock(stock)
    }
  })
  try {
    for await (const item of spool.values()) await writer.add(item)
    await writer.finish()
  } finally {
    // A write that failed meanwhile is rolled back with the rest; none may be left running.
    await writer.settled()
  }
  if (!checker.ok) throw checker.error()
  // The file's quantity is the stock: the active holds on the rows it wrote are taken from it again.
  await shelf.reapplyHolds(writer.written)
  // Products added, renamed or removed move in the list's order.
  if (writer.counts.created + writer.counts.updated + writer.counts.removed > 0) await renumberProducts(tx)
  return writer.counts
}
