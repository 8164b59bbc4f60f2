// The bench's new ceilings run whenever the scenarios compared with them do, and the minimal
// order is only what an order must: two conditional decrements, the order row, its items.
import t from 'tap'
import { pgbenchMinimalScript } from '../../bench/orders.ts'
import { SCENARIOS, selectScenarios } from '../../bench/scenarios.ts'

t.test('a scenario brings its further ceilings with it', async (t) => {
  const product = selectScenarios(SCENARIOS, 'product')
  t.ok(product.has('bare-product') && product.has('db-product'), 'product: both id ceilings')
  const search = selectScenarios(SCENARIOS, 'search')
  t.ok(search.has('bare-list') && search.has('db-list'), 'search: both page ceilings')
  const orders = selectScenarios(SCENARIOS, 'order-create')
  t.ok(orders.has('order-create-min') && orders.has('order-create-raw'), 'order-create: the minimal order and the raw transaction')
  t.notOk(selectScenarios(SCENARIOS, 'bare-product').has('db-product'), 'a ceiling alone brings nothing')
})

t.test('the minimal order script', async (t) => {
  const script = pgbenchMinimalScript({ lines: 10, trackedProducts: 5, untrackedEnd: 8 }, '00000000-0000-4000-8000-000000000000')
  t.equal(script.match(/^UPDATE products SET quantity = quantity - :q[xy] WHERE .* AND quantity >= :q[xy];$/gm)?.length, 2, 'two conditional decrements')
  t.match(script, /\\set y random\(:a \+ 1, 5\)/, 'of two distinct tracked products, in line order')
  t.match(script, /nextval\('order_number_seq'\)/, 'the order row numbered')
  t.equal(script.match(/INSERT INTO order_items/g)?.length, 1, 'its two items in one INSERT')
  t.notMatch(script, /order_counts|change_events|updated_at = now\(\)/, 'nothing an order need not do')
  t.throws(() => pgbenchMinimalScript({ lines: 10, trackedProducts: 1, untrackedEnd: 8 }, 'k'), /two tracked products/)
})
