// Product search (`query`): the ids of one page of the products whose name, SKUs or barcodes
// contain the text, in the list's order, and the exact number of them.
//
// It reads `product_search`, one narrow row a product that only imports write: the trigram
// index finds the candidates, and every candidate row is read once to confirm the substring
// (PostgreSQL cannot count a bitmap scan without reading the rows, and a substring match is
// always rechecked). That one pass gives both the total and, sorted by the row's own sort key,
// the page: the cost is the number of matches, whatever the page.
//
// A piece many products share would read thousands of rows that way. For those PostgreSQL
// keeps `search_heads` (migration 0017): each such piece's total and first page, brought up to
// date in the transaction that changes the search texts. The first page of a search for one
// of them, with no other filter, reads that one row.
import { sql, type SQL } from 'drizzle-orm'
import type { ListWindow, SortKey } from '../schemas/common.ts'
import { containing, execute, type Tx } from './client.ts'
import { whereClause, type ProductFilters } from './product-filters.ts'

export interface SearchMatches {
  /** The page's product ids, in the list's order. */
  ids: string[]
  /** The sort key to start the next page from; null when no product follows. */
  next: SortKey | null
  /** How many products match, over every page. */
  total: number
}

interface MatchRow { total: number, id: string | null, sort_name: string | null }

/**
 * The page `window` of the products matching `query` (a case-insensitive substring of the
 * name, a SKU or a barcode of the product or of one of its combinations) and every other
 * filter, by lower(name) then id, with the number of them.
 */
export async function findSearchMatches (db: Tx, query: string, filters: Omit<ProductFilters, 'query'>, window: ListWindow): Promise<SearchMatches> {
  const piece = query.toLowerCase()
  if (HEAD_PIECE.test(piece) && window.offset === 0 && window.after === null && whereClause(filters) === null) {
    const head = await readSearchHead(db, piece, window.limit)
    if (head !== null) return head
  }
  const matches = searchMatches(query, filters)
  const after = window.after === null ? sql`true` : sql`(sort_name, id) > (${window.after[0]}, ${window.after[1]}::uuid)`
  const rows = await execute<MatchRow>(db, sql`
    with matches as materialized (${matches}),
    page as (select id, sort_name from matches where ${after} order by sort_name, id limit ${window.limit + 1} offset ${window.offset})
    select (select count(*)::int from matches) as total, page.id, page.sort_name
    from (select) as one left join page on true
    order by page.sort_name, page.id`)
  return pageOf(rows, window.limit)
}

/** What a search head may hold: 3 to 6 letters a-z (search_head_pieces in migration 0017). */
const HEAD_PIECE = /^[a-z]{3,6}$/

/**
 * The first page of `piece` from its search head; null when the piece has none (it is rarer
 * than the heads' threshold, or matches nothing) or the head is shorter than the page.
 */
async function readSearchHead (db: Tx, piece: string, limit: number): Promise<SearchMatches | null> {
  const [head] = await execute<{ total: number, ids: string[], sort_names: string[] }>(db, sql`
    select products as total, to_json(head[1:${limit + 1}]) as ids, to_json(head_sort_names[1:${limit + 1}]) as sort_names
    from search_heads
    where piece = ${piece} and (cardinality(head) > ${limit} or cardinality(head) = products)`)
  if (head === undefined) return null
  return pageOf(head.ids.map((id, i) => ({ total: head.total, id, sort_name: head.sort_names[i]! })), limit)
}

/** A page from its rows: the total on each (a row with a null id when none matches), and one row more than the page when another follows. */
function pageOf (rows: MatchRow[], limit: number): SearchMatches {
  const found = rows.filter((row): row is MatchRow & { id: string, sort_name: string } => row.id !== null)
  const shown = found.slice(0, limit)
  const last = shown.at(-1)
  return {
    ids: shown.map((row) => row.id),
    next: found.length > limit && last ? [last.sort_name, last.id] : null,
    total: rows[0]?.total ?? 0
  }
}

/**
 * The products matching `query` and every other filter, as rows `(id, sort_name)` in no
 * order (sort_name is lower(name): the list orders by it, then id).
 */
export function searchMatches (query: string, filters: Omit<ProductFilters, 'query'>): SQL {
  const others = whereClause(filters)
  // Other filters join the products; without them the products are not read at all.
  return others === null
    ? sql`select s.product_id as id, s.sort_name from product_search s where s.search_text like ${containing(query.toLowerCase())}`
    : sql`select s.product_id as id, s.sort_name from product_search s join products p on p.id = s.product_id
          where s.search_text like ${containing(query.toLowerCase())} and ${others}`
}

/**
 * Builds every search head anew from product_search. Writes through product_search keep them
 * up to date by themselves; a bulk load that ran with triggers off calls this.
 */
export async function rebuildSearchHeads (tx: Tx): Promise<void> {
  await tx.execute(sql`select rebuild_search_heads()`)
}
