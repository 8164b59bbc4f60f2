import t from 'tap'
import { checkCatalog } from '../../lib/catalog-file.ts'
import { demoCatalog } from '../../services/demo-catalog.ts'
import { sellPriceCents, toCents } from '../../lib/money.ts'
import { authHeaders, buildTestApp, importProducts, makeKey } from '../helper.ts'

const NOW = new Date('2026-03-15T10:30:00Z')

t.test('the demo catalogue is a valid, deterministic and varied catalogue', async (t) => {
  const demo = demoCatalog(NOW)
  t.doesNotThrow(() => checkCatalog(structuredClone(demo)))
  t.strictSame(demoCatalog(new Date('2026-03-15T23:59:59Z')), demo, 'the same on the same day')
  t.strictSame(demoCatalog(new Date('2027-08-01T00:00:00Z')).products!.map((p) => p.id), demo.products!.map((p) => p.id), 'fixed ids')

  const products = demo.products!
  t.ok(products.length >= 30 && products.length <= 45, `${products.length} products`)
  t.equal(demo.categories!.length, 5)
  t.equal(demo.brands!.length, 3)
  for (const category of demo.categories!) {
    t.ok(products.some((p) => p.categoryIds?.includes(category.id)), `${category.name} has products`)
  }
  t.ok(products.some((p) => p.brandId === null), 'a product without a brand')

  const states = products.filter((p) => p.discount).map((p) => {
    const starts = p.discount!.startsAt ? new Date(p.discount!.startsAt) : null
    const ends = p.discount!.endsAt ? new Date(p.discount!.endsAt) : null
    return starts !== null && starts > NOW ? 'future' : ends !== null && ends <= NOW ? 'expired' : 'active'
  })
  t.ok(states.filter((s) => s === 'active').length >= 3, 'several active discounts')
  t.ok(states.includes('future'), 'a future discount')
  t.ok(states.includes('expired'), 'an expired discount')
  t.ok(products.some((p) => p.discount?.type === 'percentage') && products.some((p) => p.discount?.type === 'amount'), 'both kinds')

  const simple = products.filter((p) => !p.combinations?.length)
  t.ok(simple.some((p) => p.quantity === 0), 'out of stock')
  t.ok(simple.some((p) => p.quantity === null), 'untracked stock')
  t.ok(products.some((p) => !p.isAvailable), 'unavailable')

  const withCombinations = products.filter((p) => p.combinations?.length)
  t.ok(withCombinations.length >= 3, 'products with combinations')
  t.ok(withCombinations.some((p) => p.variants!.length === 2), 'two variants (Color × Size)')
  t.ok(withCombinations.some((p) => p.combinations!.some((c) => c.discount)), 'a combination with its own discount')
  t.ok(withCombinations.some((p) => p.combinations!.some((c) => c.quantity === null)), 'an untracked combination')

  const prices = products.flatMap((p) => [p.price, ...(p.combinations ?? []).map((c) => c.price)])
  t.ok(prices.some((price) => !Number.isInteger(price)), 'prices with cents')
  const barcodes = products.flatMap((p) => [p.barcode, ...(p.combinations ?? []).map((c) => c.barcode)]).filter((b) => typeof b === 'string')
  t.ok(barcodes.length > 30)
  for (const barcode of barcodes) {
    const digits = [...barcode].map(Number)
    const sum = digits.slice(0, 12).reduce((total, d, i) => total + d * (i % 2 === 0 ? 1 : 3), 0)
    if (!/^\d{13}$/.test(barcode) || (10 - (sum % 10)) % 10 !== digits[12]) t.fail(`${barcode} is not an EAN-13`)
  }
  t.equal(new Set(barcodes).size, barcodes.length, 'barcodes are unique')
  const skus = products.flatMap((p) => [p.sku, ...(p.combinations ?? []).map((c) => c.sku)])
  t.equal(new Set(skus).size, skus.length, 'SKUs are unique')
})

t.test('the demo catalogue imports and the API lists it', async (t) => {
  const app = await buildTestApp(t)
  const { key } = await makeKey(app)
  const now = new Date()
  const demo = demoCatalog(now)
  const products = demo.products!
  t.strictSame(await importProducts(app, demo), { categories: 5, brands: 3, products: products.length, created: products.length, updated: 0, unchanged: 0, removed: 0 })

  const page1 = await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })
  t.equal(page1.statusCode, 200)
  t.match(page1.json(), { page: 1, pageSize: 25, total: products.length })
  t.equal(page1.json().items.length, 25)
  const page2 = (await app.inject({ url: '/external/v1/products?page=2', headers: authHeaders(key) })).json()
  t.equal(page2.items.length, products.length - 25)
  const listed = [...page1.json().items, ...page2.items] as Array<{ id: string, name: string, sellPrice: number, price: number, quantity: number | null }>
  t.strictSame(listed.map((p) => p.id).sort(), products.map((p) => p.id).sort(), 'every product is listed once')
  t.strictSame(listed.map((p) => p.name), [...listed.map((p) => p.name)].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1)), 'sorted by name')

  // Prices as the API shows them match the pricing rules on the file's data.
  for (const p of products) {
    const shown = listed.find((l) => l.id === p.id)!
    t.equal(shown.price, p.price, `${p.name} price`)
    t.equal(shown.sellPrice, sellPriceCents(toCents(p.price), p.discount ? { ...p.discount, startsAt: p.discount.startsAt ?? null, endsAt: p.discount.endsAt ?? null } : null, now) / 100, `${p.name} sellPrice`)
  }

  const shirt = products.find((p) => p.name === 'Barista T-shirt')!
  const res = await app.inject({ url: `/external/v1/products/${shirt.id}`, headers: authHeaders(key) })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.strictSame(body.variants.map((v: { name: string }) => v.name), ['Color', 'Size'])
  t.equal(body.combinations.length, 12)
  t.equal(body.quantity, shirt.combinations!.reduce((sum, c) => sum + c.quantity!, 0), 'quantity is the sum of the combinations')
  t.ok(body.combinations.some((c: { isAvailable: boolean }) => !c.isAvailable))

  const hoodie = listed.find((p) => p.name === 'Roaster Hoodie')!
  t.equal(hoodie.quantity, null, 'an untracked combination makes the product untracked')

  const grinder = (await app.inject({ url: `/external/v1/products/${products.find((p) => p.name === 'Burr Grinder')!.id}`, headers: authHeaders(key) })).json()
  const copper = grinder.combinations.find((c: { sku: string }) => c.sku.endsWith('-COP'))
  t.match(copper, { price: 139, sellPrice: 129 }, 'the combination\'s own discount')
  t.equal(grinder.sellPrice, grinder.price, 'the product\'s own discount has expired')

  const search = (await app.inject({ url: '/external/v1/products?query=grinder', headers: authHeaders(key) })).json()
  t.equal(search.total, 1)
  const tea = (await app.inject({ url: `/external/v1/products?categoryIds=${demo.categories![1]!.id}`, headers: authHeaders(key) })).json()
  t.equal(tea.total, products.filter((p) => p.categoryIds?.includes(demo.categories![1]!.id)).length)

  t.strictSame(await importProducts(app, demoCatalog(now)), { categories: 5, brands: 3, products: products.length, created: 0, updated: 0, unchanged: products.length, removed: 0 }, 'loading it again changes no product')
  const again = (await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })).json()
  t.equal(again.total, products.length, 'loading it again adds nothing')
})
