// Importing a catalogue, whoever asks (`storefront catalog import`, `catalog demo`, the demo
// store's first start): one transaction, one import at a time across the fleet, each item
// checked on its own as the file is read (lib/catalog-file.ts) and the valid ones written in
// batches (db/catalog.ts), so a file of any length is imported in bounded memory. A bad file
// changes nothing: the whole import rolls back, and the error lists every problem.
import { analyzeCatalog, allowIdleTransaction, CatalogWriter, lockCatalogImports, type WriterOptions } from '../db/catalog.ts'
import type { Database } from '../db/client.ts'
import { renumberProducts, rewriteProductDocuments } from '../db/products.ts'
import { lockActiveHolds, reapplyHolds } from '../db/reservations.ts'
import { resetCatalog } from '../db/settings.ts'
import { CatalogChecker, catalogEntries } from '../lib/catalog-file.ts'
import { JsonStreamError, type JsonStreamEntry } from '../lib/json-stream.ts'
import type { CatalogFile } from '../schemas/catalog-file.ts'

export { IMPORT_BATCH } from '../db/catalog.ts'

export type ImportOptions = WriterOptions

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
  const entries = isEntries(source) ? source : catalogEntries(source)
  const counts = await database.db.transaction(async (tx) => {
    // Two imports never interleave their writes (nor deadlock on each other's rows).
    await lockCatalogImports(tx)
    // Active holds are locked before any stock row, as every other path takes them.
    await lockActiveHolds(tx)
    // The file is read while the transaction is open: a slow stdin is not an idle session.
    await allowIdleTransaction(tx, database.kind)
    const now = new Date()
    const writer = new CatalogWriter(tx, checker, now, options)
    try {
      for await (const entry of entries) {
        const item = checker.check(entry)
        // After the first problem nothing more is written (it would be rolled back), but
        // the rest of the file is still checked, so one run lists every problem.
        if (item && checker.ok) await writer.add(item)
      }
    } catch (err) {
      if (!(err instanceof JsonStreamError)) throw err
      checker.unreadable(err)
    }
    if (checker.ok) {
      await writer.finish()
      // The file's quantity is the stock: the active holds on the rows it wrote are taken from it again.
      await reapplyHolds(tx, now)
      // Products added, renamed or removed move in the list's order.
      if (checker.ok && writer.counts.created + writer.counts.updated + writer.counts.removed > 0) await renumberProducts(tx)
      // Once every batch and late reference is written: a product's brand may be set last.
      // Its row locks are this transaction's, so no order's document can be overwritten.
      if (checker.ok) await rewriteProductDocuments(tx, writer.written, now)
    } else {
      // The file's problems are what the operator needs; a write that failed meanwhile
      // (its batch was valid) is rolled back with the rest.
      await writer.settled()
    }
    if (!checker.ok) throw checker.error()
    return writer.counts
  })
  // Every committed import, even one that changed no product: category and brand names may
  // have. Every instance drops its whole cache (per-product freshness is for orders and the sweep).
  await resetCatalog(database.db)
  if (counts.created + counts.updated + counts.removed > 0) {
    // Fresh statistics for the planner at once: PGlite never runs autovacuum, and PostgreSQL's
    // may come minutes later, while a new catalogue without them plans list queries badly.
    await analyzeCatalog(database.db)
  }
  return { ...checker.counts, ...counts }
}
