// The whole catalogue's list kept a page a row (product_list_pages), so that page n of the
// unfiltered list is one row read and sent as it is, where building it reads, decodes and
// joins 25 documents. A page is served only while it is exact:
//
// - Every write of a document marks the page its product is on (db/stock.ts writeDocuments
//   inserts a row into product_list_page_changes in the same statement), and a marked page is
//   not served: the list is read from the documents as before. Marks are only ever inserted,
//   so two writers never wait for each other here.
// - The rebuild (`rebuildListPages`, run in the background by every instance) locks the
//   pages' rows, then, in one statement, deletes their marks and builds them from the
//   documents. That statement's snapshot sees every mark it deletes, and so every document
//   written with it; a mark committed after it stays, and so the page stays unserved.
// - A renumbering (an import that adds, renames or removes products) moves every position:
//   it takes the marks' table in EXCLUSIVE mode, then makes every page unbuilt and marked. A
//   document write waits for that lock before its statement reads the positions (a statement
//   takes its tables' locks before its snapshot), so no mark is ever placed by positions a
//   renumbering has replaced.
// - A page past one of its products' price changes (a discount starting or ending) is not
//   served either: the sweep rewrites those documents, which marks the page.
import { sql } from 'drizzle-orm'
import { PAGE_SIZE, type SortKey } from '../schemas/common.ts'
import { runStatement, statement, type Tx } from './client.ts'

/** The pages kept whole: the whole catalogue's list (list positions `''`). */
const KEPT_LIST = ''
/** KEPT_LIST written into a statement (statements take no values but their parameters). */
const KEPT = sql.raw(`'${KEPT_LIST}'`)
const SIZE = sql.raw(String(PAGE_SIZE))
/** A page's products and the one after them. */
const NEXT = sql.raw(String(PAGE_SIZE + 1))

/** The page a position of the whole list is on, in SQL (the page size written in: statements stay fixed). */
const pageOf = (position: string) => sql.raw(`(${position} - 1) / ${PAGE_SIZE} + 1`)

/**
 * For a statement that writes documents: inserts the marks of the pages showing the products
 * `productIds` selects (a subquery of product ids).
 */
export const markPagesOf = (productIds: ReturnType<typeof sql>) => sql`insert into product_list_page_changes (list, page)
  select l.list, ${pageOf('l.position')} from product_list_positions l where l.list = ${KEPT} and l.product_id in (${productIds})`

/** A kept page as it is stored. */
export interface KeptPage {
  /** The products' documents, joined by commas: the page's `items` without the brackets. */
  items: string
  etags: string
  ids: string[]
  priceChangesAt: Date | null
  /** The sort key of the page's last product when another follows. */
  next: SortKey | null
}

const PAGE_COLUMNS = sql`p.page, p.body, p.etags, p.product_ids, (extract(epoch from p.price_changes_at) * 1000)::float8 as changes_at, p.next_sort_name`
// The marks are looked up once a statement (their condition names no row of the pages), not
// once a page. One page keeps its generic plan; an array of pages is planned again at each
// call, which the pages read together pay once.
const READ_PAGE = statement(sql`select ${PAGE_COLUMNS}
    from product_list_pages p
    where p.list = ${KEPT} and p.page = $1::integer and p.body is not null
      and not exists (select 1 from product_list_page_changes c where c.list = ${KEPT} and c.page = $1::integer)`)
const READ_PAGES = statement(sql`select ${PAGE_COLUMNS}
    from product_list_pages p
    where p.list = ${KEPT} and p.page = any($1::integer[]) and p.body is not null
      and p.page <> all(array(select c.page from product_list_page_changes c where c.list = ${KEPT} and c.page = any($1::integer[])))`)

interface PageRow { page: number, body: string, etags: string, product_ids: string, changes_at: number | null, next_sort_name: string | null }

/** Pages of the whole list as kept, by number; a page that is not (unbuilt, marked, or past a price change) is absent. */
export async function readKeptPages (db: Tx, pages: readonly number[], now: Date): Promise<Map<number, KeptPage>> {
  if (pages.length === 0) return new Map()
  const rows = pages.length === 1
    ? await runStatement<PageRow>(db, READ_PAGE, [pages[0]])
    : await runStatement<PageRow>(db, READ_PAGES, [`{${pages.join(',')}}`])
  const kept = new Map<number, KeptPage>()
  for (const row of rows) {
    if (row.changes_at !== null && row.changes_at <= now.getTime()) continue
    const ids = row.product_ids.split(',')
    kept.set(row.page, {
      items: row.body,
      etags: row.etags,
      ids,
      priceChangesAt: row.changes_at === null ? null : new Date(row.changes_at),
      next: row.next_sort_name === null ? null : [row.next_sort_name, ids.at(-1)!]
    })
  }
  return kept
}

/**
 * After a renumbering moved the positions (in its transaction): every page of the list
 * unbuilt and marked, for the rebuild. The marks' table is locked first (see above).
 */
export async function resetListPages (tx: Tx): Promise<void> {
  await tx.execute(sql`lock table product_list_page_changes in exclusive mode`)
  await tx.execute(sql`delete from product_list_page_changes where list = ${KEPT}`)
  await tx.execute(sql`delete from product_list_pages where list = ${KEPT}`)
  await tx.execute(sql`insert into product_list_pages (list, page)
    select ${KEPT}, g from generate_series(1, (select (coalesce(max(position), 0) + ${SIZE} - 1) / ${SIZE} from product_list_positions where list = ${KEPT})) g`)
  await tx.execute(sql`insert into product_list_page_changes (list, page) select list, page from product_list_pages where list = ${KEPT}`)
}

// The marked pages this rebuild takes, locked; those another rebuild holds are left to it.
// Drawn at random: under a flow of marks faster than the rebuilds, taking the first pages
// each time would leave the last ones marked for good.
const CLAIM_PAGES = statement(sql`select p.page from product_list_pages p
    where p.list = ${KEPT} and p.page in (
      select m.page from (select distinct c.page from product_list_page_changes c where c.list = ${KEPT}) m order by random() limit $1::integer)
    order by p.page for update skip locked`)

// Their marks deleted and their rows built, in one snapshot. Each page reads its positions
// and one more: whether a product follows it (its last product's sort key is kept then).
const BUILD_PAGES = statement(sql`with cleared as (
      delete from product_list_page_changes c where c.list = ${KEPT} and c.page = any($1::integer[])
    ), items as (
      select g.page, l.position, l.position <= g.page * ${SIZE} as shown, l.product_id, d.body, d.etag, d.price_changes_at,
        case when l.position = g.page * ${SIZE} then (select lower(p.name) from products p where p.id = l.product_id) end as sort_name
      from unnest($1::integer[]) as g(page)
      -- A range of positions a page (the LIMIT keeps it a subquery of its own: flattened, the
      -- planner may join every position of the list first).
      cross join lateral (
        select l.position, l.product_id from product_list_positions l
        where l.list = ${KEPT} and l.position > (g.page - 1) * ${SIZE}
        order by l.position limit ${NEXT}
      ) l
      left join product_documents d on d.product_id = l.product_id
    ), built as (
      select page,
        bool_and(body is not null) filter (where shown) as complete,
        string_agg(body, ',' order by position) filter (where shown) as body,
        string_agg(etag, ',' order by position) filter (where shown) as etags,
        string_agg(product_id::text, ',' order by position) filter (where shown) as product_ids,
        min(price_changes_at) filter (where shown) as price_changes_at,
        case when bool_or(not shown) then max(sort_name) end as next_sort_name
      from items group by page
    )
    update product_list_pages p set body = case when b.complete then b.body end, etags = b.etags, product_ids = b.product_ids,
      price_changes_at = b.price_changes_at, next_sort_name = b.next_sort_name
    from built b where p.list = ${KEPT} and p.page = b.page`)

/**
 * Builds up to `batch` marked pages from the documents; returns how many it took. Call in a
 * transaction of its own. The marks' table is taken first (ROW EXCLUSIVE, as the marks' delete
 * would), so a renumbering that waits for these pages' rows is not waited for in turn.
 */
export async function rebuildListPages (tx: Tx, batch: number): Promise<number> {
  await tx.execute(sql`lock table product_list_page_changes in row exclusive mode`)
  const pages = (await runStatement<{ page: number }>(tx, CLAIM_PAGES, [batch])).map((r) => r.page)
  if (pages.length > 0) await runStatement(tx, BUILD_PAGES, [`{${pages.join(',')}}`])
  return pages.length
}
