// The order path's statements: rendered once, run through the driver, and the stock taken in
// one call (take_stock) in the order given, stopping at the first entry that is short, only
// from products the transaction has locked.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute, runStatement, statement } from '../../db/client.ts'
import { lockProducts, ProductLocks, takeStock } from '../../db/stock.ts'
import { buildTestApp, importProducts, makeProduct } from '../helper.ts'

const app = await buildTestApp(t)
const { db } = app.database
const quantities = async (ids: string[]) => (await execute<{ id: string, quantity: number | null }>(db, sql`
  select id::text, quantity from products where id in (${sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)})`))
  .reduce<Record<string, number | null>>((all, r) => ({ ...all, [r.id]: r.quantity }), {})

t.test('a statement is rendered once and refuses values in place of $n', async (t) => {
  const twice = statement(sql`select $1::int * 2 as n`)
  t.same(await runStatement(db, twice, [21]), [{ n: 42 }], 'runs with positional parameters')
  t.throws(() => statement(sql`select ${1}::int`), /parameters as \$n/)
  // Inside a transaction it runs on the transaction's connection: what it writes is seen there and rolled back with it.
  const [product] = [makeProduct({ quantity: 5 })]
  await importProducts(app, [product!])
  await db.transaction(async (tx) => {
    const locks = await lockProducts(tx, [product!.id])
    t.equal(await takeStock(tx, locks, [{ owner: 'products', id: product!.id, productId: product!.id, quantity: 2 }]), null)
    const [row] = await runStatement<{ quantity: number }>(tx, statement(sql`select quantity from products where id = $1::uuid`), [product!.id])
    t.equal(row!.quantity, 3, 'the transaction sees its own decrement')
    tx.rollback()
  }).catch((err: Error) => { if (!/rollback/i.test(err.message)) throw err })
  t.same(await quantities([product!.id]), { [product!.id]: 5 }, 'and it went with the rollback')
})

t.test('takeStock takes every entry, in one call, or names the first that is short', async (t) => {
  const [a, b, c] = [makeProduct({ quantity: 5 }), makeProduct({ quantity: 1 }), makeProduct({ quantity: 5 })]
  await importProducts(app, [a, b, c])
  const take = (owner: 'products' | 'combinations', product: { id: string }, quantity: number, id = product.id) => ({ owner, id, productId: product.id, quantity })
  // Outside a transaction, as if locked: what is taken stays taken.
  const locks = new ProductLocks([a.id, b.id, c.id])
  t.equal(await takeStock(db, locks, []), null, 'nothing to take')
  t.equal(await takeStock(db, locks, [take('products', a, 2), take('products', c, 5)]), null)
  t.same(await quantities([a.id, b.id, c.id]), { [a.id]: 3, [b.id]: 1, [c.id]: 0 }, 'both taken')
  // Outside a transaction nothing rolls back: what came before the short entry stays taken, what came after is not tried.
  t.equal(await takeStock(db, locks, [take('products', a, 1), take('products', b, 2), take('products', a, 1)]), 1, 'the second entry is short')
  t.same(await quantities([a.id, b.id]), { [a.id]: 2, [b.id]: 1 }, 'the first taken, the short one and the third not')
  t.equal(await takeStock(db, locks, [take('combinations', a, 1, crypto.randomUUID())]), 0, 'an unknown combination is short')
  await t.rejects(takeStock(db, new ProductLocks([a.id]), [take('products', b, 1)]), /without its lock/, 'a product not locked is refused before any SQL')
  t.same(await quantities([b.id]), { [b.id]: 1 }, 'and nothing was taken from it')
})
