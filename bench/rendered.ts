// The database ceilings' data: every product's JSON and every list page's, as the app answers
// them (the bytes as sent), kept in PostgreSQL one row each, for the bare server to send as
// they are (bench/bare-server.ts, /db/products…). A product's is its stored document, which
// the app sends as it is (copied in one statement: fetching 100,000 of them took minutes);
// a page's is fetched from the app.
import type postgres from 'postgres'

export const RENDERED_PRODUCTS = 'bench_rendered_products'
export const RENDERED_PAGES = 'bench_rendered_pages'

/** Requests in flight while filling: enough to keep the app busy, few enough to leave it room. */
const PARALLEL = 32
const ROWS_PER_INSERT = 500

export async function fillRendered (sql: postgres.Sql, input: { baseUrl: string, key: string, pages: number }): Promise<{ products: number, pages: number, ms: number }> {
  const started = performance.now()
  await sql.unsafe(`drop table if exists ${RENDERED_PRODUCTS}, ${RENDERED_PAGES}`)
  await sql.unsafe(`create table ${RENDERED_PRODUCTS} (id uuid primary key, body text not null)`)
  await sql.unsafe(`create table ${RENDERED_PAGES} (page integer primary key, body text not null)`)
  const fetchText = async (path: string): Promise<string> => {
    const res = await fetch(`${input.baseUrl}${path}`, { headers: { 'x-api-key': input.key } })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${body}`)
    return body
  }
  const fill = async <K>(keys: readonly K[], path: (key: K) => string, insert: (rows: Array<{ key: K, body: string }>) => Promise<unknown>) => {
    for (let i = 0; i < keys.length; i += ROWS_PER_INSERT) {
      const chunk = keys.slice(i, i + ROWS_PER_INSERT)
      const rows: Array<{ key: K, body: string }> = []
      for (let j = 0; j < chunk.length; j += PARALLEL) {
        const part = chunk.slice(j, j + PARALLEL)
        rows.push(...await Promise.all(part.map(async (key) => ({ key, body: await fetchText(path(key)) }))))
      }
      await insert(rows)
    }
  }
  const copied = await sql.unsafe(`insert into ${RENDERED_PRODUCTS} (id, body) select product_id, body from product_documents`)
  const pages = Array.from({ length: input.pages }, (_, i) => i + 1)
  await fill(pages, (page) => `/external/v1/products?page=${page}`,
    (rows) => sql`insert into ${sql(RENDERED_PAGES)} ${sql(rows.map((r) => ({ page: r.key, body: r.body })))}`)
  await sql.unsafe(`vacuum analyze ${RENDERED_PRODUCTS}, ${RENDERED_PAGES}`)
  return { products: copied.count, pages: input.pages, ms: performance.now() - started }
}
