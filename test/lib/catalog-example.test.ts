// examples/catalog.json, the file the README points to, is a complete and valid catalogue:
// it passes the checks and imports with every kind of field the format has.
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { checkCatalog } from '../../lib/catalog-file.ts'
import { authHeaders, buildTestApp, importProducts, makeKey } from '../helper.ts'

const file = JSON.parse(await readFile(new URL('../../examples/catalog.json', import.meta.url), 'utf8')) as unknown

t.test('the example passes the catalogue checks', async (t) => {
  const catalog = checkCatalog(structuredClone(file))
  t.equal(catalog.products?.length, 4)
  const fields = new Set(catalog.products!.flatMap((p) => Object.keys(p)))
  for (const field of ['sku', 'barcode', 'quantity', 'price', 'discount', 'isAvailable', 'imageUrl', 'categoryIds', 'brandId', 'variants', 'combinations']) {
    t.ok(fields.has(field), `some product shows ${field}`)
  }
})

t.test('the example imports and reads back through the API', async (t) => {
  const app = await buildTestApp(t)
  t.same(await importProducts(app, checkCatalog(structuredClone(file))), { categories: 3, brands: 2, products: 4, created: 4, updated: 0, unchanged: 0, removed: 0 })
  const { key } = await makeKey(app, ['products:list', 'products:find'])
  const list = await app.inject({ url: '/external/v1/products', headers: authHeaders(key) })
  t.equal(list.json<{ total: number }>().total, 4)
  const jacket = await app.inject({ url: '/external/v1/products/b1c7d000-0000-4000-8000-000000000003', headers: authHeaders(key) })
  // Navy M has its own 10% (94.50 → 85.05); the others take the product's 15% until 2030.
  t.match(jacket.json(), {
    quantity: 12,
    combinations: [{ sellPrice: 76.08 }, { sellPrice: 76.08 }, { sellPrice: 85.05 }, { sellPrice: 80.33 }]
  })
})
