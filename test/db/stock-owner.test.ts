// Stock has one owner: db/stock.ts is the only file of the application that writes the stock
// columns (products' and combinations' quantity, hold lines' held). Any other file that
// writes them, in SQL or through Drizzle, fails this test with the file and the statement.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = fileURLToPath(new URL('../..', import.meta.url))
const OWNER = 'db/stock.ts'
// The application: everything that ships. Tests and the bench's seeding write what they like.
const SKIPPED = new Set(['node_modules', 'dist', 'test', 'bench', 'coverage', 'data', '.git'])

function sources (dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIPPED.has(name) || name.startsWith('.')) return []
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.(ts|js)$/.test(name) && !name.endsWith('.d.ts') ? [path] : []
  })
}

const STOCK = { products: ['quantity'], combinations: ['quantity'], reservation_items: ['held'], reservationItems: ['held'] } as const
type Table = keyof typeof STOCK

/** Each statement of `text` that writes a stock column: `UPDATE t SET … col =`, `INSERT INTO t (… col …)`, Drizzle's `.update(t).set({ col`. */
export function stockWrites (text: string): string[] {
  const found: string[] = []
  const sqlUpdate = /\bupdate\s+(products|combinations|reservation_items)\b([\s\S]*?)\bset\b([\s\S]*?)(\bwhere\b|\bfrom\b|\breturning\b|`|;|$)/gi
  for (const m of text.matchAll(sqlUpdate)) {
    const columns = STOCK[m[1]!.toLowerCase() as Table]
    if (columns.some((c) => new RegExp(`\\b${c}\\s*=`, 'i').test(m[3]!))) found.push(m[0].replace(/\s+/g, ' ').slice(0, 120))
  }
  // A table named by a parameter (`update ${sql.raw(owner)} set quantity = …`) counts as any of them.
  for (const m of text.matchAll(/\bupdate\s+\$\{[^}]*\}([\s\S]*?)\bset\b([\s\S]*?)(\bwhere\b|\bfrom\b|`|$)/gi)) {
    if (/\b(quantity|held)\s*=/i.test(m[2]!)) found.push(m[0].replace(/\s+/g, ' ').slice(0, 120))
  }
  const sqlInsert = /\binsert\s+into\s+(products|combinations|reservation_items)\b(?:\s+as\s+\w+)?\s*\(([^)]*)\)/gi
  for (const m of text.matchAll(sqlInsert)) {
    const columns = STOCK[m[1]!.toLowerCase() as Table]
    if (columns.some((c) => new RegExp(`\\b${c}\\b`, 'i').test(m[2]!))) found.push(m[0].replace(/\s+/g, ' ').slice(0, 120))
  }
  const drizzle = /\.(update|insert)\((products|combinations|reservationItems)\)\s*\.(set|values)\(([\s\S]{0,400}?)\)/g
  for (const m of text.matchAll(drizzle)) {
    const columns = STOCK[m[2] as Table]
    if (columns.some((c) => new RegExp(`\\b${c}\\b`).test(m[4]!))) found.push(m[0].replace(/\s+/g, ' ').slice(0, 120))
  }
  return found
}

t.test('the detector finds every form of a stock write', async (t) => {
  t.equal(stockWrites('update products set quantity = quantity - 1 where id = $1').length, 1, 'an UPDATE of products.quantity')
  t.equal(stockWrites('UPDATE combinations c\n  SET price = 1, quantity = 0 FROM x').length, 1, 'over lines, upper case, beside other columns')
  t.equal(stockWrites('update reservation_items set held = 0 where reservation_id = $1').length, 1, 'a hold line\'s held units')
  t.equal(stockWrites('insert into combinations (id, product_id, quantity) values ($1, $2, $3)').length, 1, 'an INSERT that sets quantity')
  t.equal(stockWrites('insert into products as p (id, name, quantity) select …').length, 1, 'with an alias')
  t.equal(stockWrites('db.update(products).set({ quantity: 0 })').length, 1, 'through Drizzle')
  // eslint-disable-next-line no-template-curly-in-string -- the source text being scanned
  t.equal(stockWrites('sql`update ${sql.raw(owner)} set quantity = quantity + ${n}`').length, 1, 'a table named by a parameter')
  t.equal(stockWrites('update products set updated_at = now() where quantity = 0').length, 0, 'a condition on quantity is no write')
  t.equal(stockWrites('insert into combinations (id, product_id, price) values ($1, $2, $3)').length, 0, 'a row without its stock')
  t.equal(stockWrites('update products set name = $1').length, 0, 'another column')
})

t.test(`only ${OWNER} writes stock`, async (t) => {
  const files = sources(root)
  t.ok(files.some((f) => relative(root, f) === OWNER), 'the owner is among the files read')
  t.ok(files.length > 50, `the application's files are read (${files.length})`)
  const writers = Object.fromEntries(files
    .map((f) => [relative(root, f), stockWrites(readFileSync(f, 'utf8'))] as const)
    .filter(([, writes]) => writes.length > 0))
  t.ok((writers[OWNER]?.length ?? 0) >= 5, 'the owner writes stock (the detector sees its statements)')
  delete writers[OWNER]
  t.same(writers, {}, 'no other file writes a stock column')
})
