import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { countProducts } from '../../db/products.ts'
import { CatalogError, checkCatalog } from '../../lib/catalog-file.ts'
import { publishChanges } from '../../services/changes.ts'
import type { CatalogFile, CatalogProduct } from '../../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, importProducts, makeKey, makeProduct, sleep } from '../helper.ts'

// A small complete catalogue: categories, a brand, a tracked and an untracked product, a
// discount, variants and combinations.
const EXAMPLE: CatalogFile = {
  categories: [
    { id: '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01', name: 'Coffee' },
    { id: '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c02', name: 'Apparel' }
  ],
  brands: [
    { id: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01', name: 'Northwind' }
  ],
  products: [
    {
      id: 'c0ffee00-0000-4000-8000-000000000001',
      name: 'Ethiopia Yirgacheffe 250 g',
      sku: 'COF-ETH-250',
      barcode: '5901234123457',
      quantity: 40,
      price: 12.5,
      isAvailable: true,
      imageUrl: 'https://cdn.example.com/img/eth-250.jpg',
      categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'],
      brandId: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01'
    },
    {
      id: 'c0ffee00-0000-4000-8000-000000000002',
      name: 'Espresso Blend 1 kg',
      sku: 'COF-ESP-1000',
      barcode: null,
      quantity: null,
      price: 29.99,
      discount: { type: 'percentage', value: 20, startsAt: '2026-01-01T00:00:00Z', endsAt: null },
      isAvailable: true,
      imageUrl: null,
      categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'],
      brandId: null
    },
    {
      id: 'c0ffee00-0000-4000-8000-000000000003',
      name: 'Barista T-shirt',
      sku: 'APP-TEE',
      price: 20,
      isAvailable: true,
      categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c02'],
      brandId: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01',
      variants: [
        {
          id: 'aa000000-0000-4000-8000-000000000001',
          name: 'Color',
          options: [
            { id: 'aa000000-0000-4000-8000-0000000000a1', name: 'Black' },
            { id: 'aa000000-0000-4000-8000-0000000000a2', name: 'White' }]
        },
        {
          id: 'aa000000-0000-4000-8000-000000000002',
          name: 'Size',
          options: [
            { id: 'aa000000-0000-4000-8000-0000000000b1', name: 'M' },
            { id: 'aa000000-0000-4000-8000-0000000000b2', name: 'L' }]
        }
      ],
      combinations: [
        {
          id: 'bb000000-0000-4000-8000-000000000001',
          optionIds: ['aa000000-0000-4000-8000-0000000000a1', 'aa000000-0000-4000-8000-0000000000b1'],
          sku: 'APP-TEE-BLK-M',
          barcode: '5901234123464',
          quantity: 5,
          price: 20,
          isAvailable: true,
          imageUrl: null
        },
        {
          id: 'bb000000-0000-4000-8000-000000000002',
          optionIds: ['aa000000-0000-4000-8000-0000000000a1', 'aa000000-0000-4000-8000-0000000000b2'],
          sku: 'APP-TEE-BLK-L',
          barcode: '5901234123471',
          quantity: 0,
          price: 22,
          isAvailable: true,
          imageUrl: null
        },
        {
          id: 'bb000000-0000-4000-8000-000000000003',
          optionIds: ['aa000000-0000-4000-8000-0000000000a2', 'aa000000-0000-4000-8000-0000000000b1'],
          sku: 'APP-TEE-WHT-M',
          barcode: null,
          quantity: 12,
          price: 20,
          discount: { type: 'amount', value: 5, startsAt: null, endsAt: '2027-01-01T00:00:00Z' },
          isAvailable: true,
          imageUrl: null
        },
        {
          id: 'bb000000-0000-4000-8000-000000000004',
          optionIds: ['aa000000-0000-4000-8000-0000000000a2', 'aa000000-0000-4000-8000-0000000000b2'],
          sku: 'APP-TEE-WHT-L',
          barcode: null,
          quantity: 3,
          price: 22,
          isAvailable: false,
          imageUrl: null
        }
      ]
    }
  ]
}

const COFFEE = '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'
const APPAREL = '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c02'
const NORTHWIND = '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01'
const [ETHIOPIA, ESPRESSO, SHIRT] = EXAMPLE.products!.map((p) => p.id) as [string, string, string]
const OPTION = {
  black: 'aa000000-0000-4000-8000-0000000000a1',
  white: 'aa000000-0000-4000-8000-0000000000a2',
  m: 'aa000000-0000-4000-8000-0000000000b1',
  l: 'aa000000-0000-4000-8000-0000000000b2'
}

const app = await buildTestApp(t)
const { key } = await makeKey(app)

/** The product as the API shows it, less its updatedAt (checked for its form here). */
async function getProduct (id: string) {
  const res = await app.inject({ url: `/external/v1/products/${id}`, headers: authHeaders(key) })
  t.equal(res.statusCode, 200, `GET product ${id}`)
  const { updatedAt, ...product } = res.json()
  t.match(updatedAt, /^\d{4}-\d\d-\d\dT[\d:.]+Z$/, 'updatedAt is an ISO 8601 UTC time')
  return product
}

async function listProducts (query = '') {
  const res = await app.inject({ url: `/external/v1/products${query}`, headers: authHeaders(key) })
  t.equal(res.statusCode, 200, `GET products${query}`)
  return res.json()
}

const CATALOG_TABLES = {
  categories: 'id',
  brands: 'id',
  products: 'id',
  product_categories: 'product_id, category_id',
  variants: 'id',
  variant_options: 'id',
  combinations: 'id',
  combination_options: 'combination_id, option_id',
  discounts: 'id'
}

/** Every catalogue row and the catalogue version, as text: equal snapshots mean an unchanged store. */
async function snapshot (): Promise<Record<string, string>> {
  // Publishing the last import's events moves the catalogue version: let that happen first
  // (another publisher, the app's own job, may hold the lock for a moment).
  while ((await execute(app.database.db, sql`select 1 from change_events where position is null limit 1`)).length > 0) {
    await publishChanges(app.database)
    await sleep(10)
  }
  const tables: Record<string, string> = {}
  for (const [table, order] of Object.entries(CATALOG_TABLES)) {
    const [row] = await execute<{ rows: string | null }>(app.database.db,
      sql.raw(`select json_agg(t)::text as rows from (select * from ${table} order by ${order}) t`))
    tables[table] = row!.rows ?? '[]'
  }
  const [version] = await execute<{ v: string }>(app.database.db, sql`select last_value::text as v from catalog_version_seq`)
  tables.catalogVersion = version!.v
  return tables
}

async function count (table: keyof typeof CATALOG_TABLES, where = 'true'): Promise<number> {
  const [row] = await execute<{ n: number }>(app.database.db, sql.raw(`select count(*)::int as n from ${table} where ${where}`))
  return row!.n
}

const discountActive = (startsAt: string | null, endsAt: string | null, now = Date.now()) =>
  (startsAt === null || Date.parse(startsAt) <= now) && (endsAt === null || now < Date.parse(endsAt))

t.test('the example file imports and the API shows the documented shapes', async (t) => {
  t.strictSame(await importProducts(app, EXAMPLE), { categories: 2, brands: 1, products: 3, created: 3, updated: 0, unchanged: 0, removed: 0 })

  t.strictSame(await getProduct(ETHIOPIA), {
    id: ETHIOPIA,
    name: 'Ethiopia Yirgacheffe 250 g',
    sku: 'COF-ETH-250',
    barcode: '5901234123457',
    categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'],
    brandId: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01',
    quantity: 40,
    price: 12.5,
    sellPrice: 12.5,
    isAvailable: true,
    productImageUrl: 'https://cdn.example.com/img/eth-250.jpg',
    variants: [],
    combinations: []
  })

  // 20% off 29.99 is 23.992, rounded half-up to 23.99, from 2026-01-01 on.
  t.strictSame(await getProduct(ESPRESSO), {
    id: ESPRESSO,
    name: 'Espresso Blend 1 kg',
    sku: 'COF-ESP-1000',
    barcode: null,
    categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c01'],
    brandId: null,
    quantity: null,
    price: 29.99,
    sellPrice: discountActive('2026-01-01T00:00:00Z', null) ? 23.99 : 29.99,
    isAvailable: true,
    productImageUrl: null,
    variants: [],
    combinations: []
  })

  const whiteM = discountActive(null, '2027-01-01T00:00:00Z') ? 15 : 20
  t.strictSame(await getProduct(SHIRT), {
    id: SHIRT,
    name: 'Barista T-shirt',
    sku: 'APP-TEE',
    barcode: null,
    categoryIds: ['3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c02'],
    brandId: '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c01',
    quantity: 5 + 0 + 12 + 3,
    price: 20,
    sellPrice: 20,
    isAvailable: true,
    productImageUrl: null,
    variants: [
      { id: 'aa000000-0000-4000-8000-000000000001', name: 'Color', options: [{ id: OPTION.black, name: 'Black' }, { id: OPTION.white, name: 'White' }] },
      { id: 'aa000000-0000-4000-8000-000000000002', name: 'Size', options: [{ id: OPTION.m, name: 'M' }, { id: OPTION.l, name: 'L' }] }
    ],
    combinations: [
      { id: 'bb000000-0000-4000-8000-000000000001', optionIds: [OPTION.black, OPTION.m], sku: 'APP-TEE-BLK-M', barcode: '5901234123464', quantity: 5, price: 20, sellPrice: 20, isAvailable: true, imageUrl: null },
      // Sold out: marked available, but nothing left to order.
      { id: 'bb000000-0000-4000-8000-000000000002', optionIds: [OPTION.black, OPTION.l], sku: 'APP-TEE-BLK-L', barcode: '5901234123471', quantity: 0, price: 22, sellPrice: 22, isAvailable: false, imageUrl: null },
      { id: 'bb000000-0000-4000-8000-000000000003', optionIds: [OPTION.white, OPTION.m], sku: 'APP-TEE-WHT-M', barcode: null, quantity: 12, price: 20, sellPrice: whiteM, isAvailable: true, imageUrl: null },
      { id: 'bb000000-0000-4000-8000-000000000004', optionIds: [OPTION.white, OPTION.l], sku: 'APP-TEE-WHT-L', barcode: null, quantity: 3, price: 22, sellPrice: 22, isAvailable: false, imageUrl: null }
    ]
  })

  const all = await listProducts()
  t.match(all, { page: 1, pageSize: 25, total: 3 })
  t.strictSame(all.items.map((p: { name: string }) => p.name), ['Barista T-shirt', 'Espresso Blend 1 kg', 'Ethiopia Yirgacheffe 250 g'])
  const { updatedAt: _updatedAt, ...listed } = all.items[0]
  t.strictSame(listed, await getProduct(SHIRT), 'a listed product is the same as the product read alone')
  t.equal((await listProducts(`?categoryIds=${APPAREL}`)).total, 1, 'categories are linked')
  t.equal((await listProducts(`?categoryIds=${COFFEE}`)).total, 2)
  t.equal((await listProducts(`?brandIds=${NORTHWIND}`)).total, 2, 'brands are linked')
  t.equal((await listProducts('?barcode=5901234123471')).total, 1, 'combination barcodes are searchable')
  t.equal((await listProducts('?query=app-tee-wht')).total, 1, 'combination SKUs are searchable')
})

t.test('combinations: optionIds in variant order, quantity summed or null', async (t) => {
  const color = { id: crypto.randomUUID(), name: 'Color', options: [{ id: crypto.randomUUID(), name: 'Red' }, { id: crypto.randomUUID(), name: 'Blue' }] }
  const size = { id: crypto.randomUUID(), name: 'Size', options: [{ id: crypto.randomUUID(), name: 'S' }] }
  const combination = (colorIndex: number, quantity: number | null) => ({
    id: crypto.randomUUID(),
    // Written size first: the API gives them in the order of the variants.
    optionIds: [size.options[0]!.id, color.options[colorIndex]!.id],
    quantity,
    price: 9.99,
    isAvailable: true
  })
  const tracked = makeProduct({ quantity: 999, variants: [color, size], combinations: [combination(0, 4), combination(1, 6)] })
  const untracked = makeProduct({ quantity: 7, variants: structuredClone([color, size]).map((v) => ({ ...v, id: crypto.randomUUID(), options: v.options.map((o) => ({ ...o, id: crypto.randomUUID() })) })) })
  untracked.combinations = [
    { id: crypto.randomUUID(), optionIds: [untracked.variants![0]!.options[0]!.id, untracked.variants![1]!.options[0]!.id], quantity: 3, price: 5, isAvailable: true },
    { id: crypto.randomUUID(), optionIds: [untracked.variants![1]!.options[0]!.id, untracked.variants![0]!.options[1]!.id], price: 5, isAvailable: false }
  ]
  await importProducts(app, [tracked, untracked])

  const a = await getProduct(tracked.id)
  t.equal(a.quantity, 10, 'the sum of the combinations, not the quantity written on the product')
  t.strictSame(a.combinations.map((c: { optionIds: string[] }) => c.optionIds), [
    [color.options[0]!.id, size.options[0]!.id],
    [color.options[1]!.id, size.options[0]!.id]
  ])
  t.strictSame(a.combinations.map((c: { sku: unknown, barcode: unknown, imageUrl: unknown }) => [c.sku, c.barcode, c.imageUrl]), [[null, null, null], [null, null, null]], 'absent fields are null')
  const b = await getProduct(untracked.id)
  t.equal(b.quantity, null, 'null when any combination is untracked, available or not')
  t.equal(b.combinations[1].quantity, null)
})

t.test('re-import upserts by id: changes are reflected, children replaced, nothing duplicated', async (t) => {
  await importProducts(app, EXAMPLE)
  const productsBefore = await countProducts(app.database.db)
  const red = 'aa000000-0000-4000-8000-0000000000a3'
  const file = structuredClone(EXAMPLE)
  file.categories![1]!.name = 'Clothing'
  const [ethiopia, espresso, shirt] = file.products! as [CatalogProduct, CatalogProduct, CatalogProduct]
  // The same product whatever the case of its id.
  ethiopia.id = ethiopia.id.toUpperCase()
  Object.assign(ethiopia, { name: 'Ethiopia Yirgacheffe 250 g (new crop)', price: 13.5, quantity: 12, categoryIds: [COFFEE, APPAREL] })
  delete espresso.discount
  espresso.categoryIds = []
  shirt.variants![0]!.options = [{ id: OPTION.black, name: 'Black' }, { id: red, name: 'Red' }]
  shirt.combinations = [
    { id: 'bb000000-0000-4000-8000-000000000001', optionIds: [OPTION.black, OPTION.m], quantity: 2, price: 21, isAvailable: true },
    { id: 'bb000000-0000-4000-8000-000000000005', optionIds: [red, OPTION.l], quantity: 7, price: 23.5, discount: { type: 'percentage', value: 10, startsAt: null, endsAt: null }, isAvailable: true }
  ]
  t.strictSame(await importProducts(app, file), { categories: 2, brands: 1, products: 3, created: 0, updated: 3, unchanged: 0, removed: 0 })

  t.equal(await countProducts(app.database.db), productsBefore, 'no product added')
  t.equal(await count('categories'), 2)
  t.equal(await count('brands'), 1)
  t.match(await getProduct(ETHIOPIA), { id: ETHIOPIA, name: 'Ethiopia Yirgacheffe 250 g (new crop)', price: 13.5, sellPrice: 13.5, quantity: 12 })
  t.equal(await count('product_categories', `product_id = '${ETHIOPIA}'`), 2)
  t.equal((await listProducts(`?categoryIds=${APPAREL}`)).total, 2)
  t.match(await getProduct(ESPRESSO), { price: 29.99, sellPrice: 29.99 }, 'a discount left out of the file is removed')
  t.equal(await count('product_categories', `product_id = '${ESPRESSO}'`), 0)

  const tee = await getProduct(SHIRT)
  t.strictSame(tee.variants[0].options, [{ id: OPTION.black, name: 'Black' }, { id: red, name: 'Red' }])
  t.strictSame(tee.combinations, [
    { id: 'bb000000-0000-4000-8000-000000000001', optionIds: [OPTION.black, OPTION.m], sku: null, barcode: null, quantity: 2, price: 21, sellPrice: 21, isAvailable: true, imageUrl: null },
    { id: 'bb000000-0000-4000-8000-000000000005', optionIds: [red, OPTION.l], sku: null, barcode: null, quantity: 7, price: 23.5, sellPrice: 21.15, isAvailable: true, imageUrl: null }
  ])
  t.equal(tee.quantity, 9)
  t.equal(await count('variants', `product_id = '${SHIRT}'`), 2)
  t.equal(await count('variant_options', `variant_id in (select id from variants where product_id = '${SHIRT}')`), 4)
  t.equal(await count('combinations', `product_id = '${SHIRT}'`), 2)
  t.equal(await count('combination_options', `combination_id in (select id from combinations where product_id = '${SHIRT}')`), 4)
  t.equal(await count('discounts', `combination_id in (select id from combinations where product_id = '${SHIRT}')`), 1, 'the old combination discount is gone')
  t.equal(await count('variant_options', `id = '${OPTION.white}'`), 0, 'a dropped option is deleted')

  // A file that lists only some products leaves the others as they are.
  await importProducts(app, [{ ...ethiopia, price: 14 }])
  t.equal(await countProducts(app.database.db), productsBefore)
  t.equal((await getProduct(ETHIOPIA)).price, 14)
  t.equal((await getProduct(SHIRT)).combinations.length, 2)

  // Variants and combinations may move between products listed in the same file.
  const moved = structuredClone(EXAMPLE)
  const receiver = makeProduct({ variants: moved.products![2]!.variants, combinations: moved.products![2]!.combinations })
  moved.products![2]!.variants = []
  moved.products![2]!.combinations = []
  await importProducts(app, { products: [moved.products![2]!, receiver] })
  t.equal((await getProduct(receiver.id)).combinations.length, 4)
  t.equal((await getProduct(SHIRT)).combinations.length, 0)
  await t.rejects(importProducts(app, EXAMPLE), { message: /products\[2\]\.variants\[0\]\.id: belongs to another product/ },
    'but not away from a product the file does not list')
  await importProducts(app, { products: [EXAMPLE.products![2]!, { ...receiver, variants: [], combinations: [] }] })
  t.equal((await getProduct(SHIRT)).combinations.length, 4, 'and back')
  t.equal((await getProduct(receiver.id)).combinations.length, 0)
})

t.test('a bad file is rejected naming the JSON path, and the store is unchanged', async (t) => {
  await importProducts(app, EXAMPLE)
  // Another product already in the store, whose children a file must not take over.
  const other = makeProduct({
    name: 'Other product',
    variants: [{ id: crypto.randomUUID(), name: 'Color', options: [{ id: crypto.randomUUID(), name: 'Green' }] }]
  })
  other.combinations = [{ id: crypto.randomUUID(), optionIds: [other.variants![0]!.options[0]!.id], quantity: 1, price: 10, isAvailable: true }]
  await importProducts(app, [other])

  const base = () => {
    const file = structuredClone(EXAMPLE)
    // Changes that would show if anything of a failed file were written.
    file.categories![0]!.name = 'Renamed'
    file.brands![0]!.name = 'Renamed'
    file.products![0]!.price = 1
    file.products![2]!.combinations!.pop()
    file.products!.push(makeProduct({ categoryIds: [COFFEE] }))
    return file as CatalogFile & { products: CatalogProduct[] }
  }
  const otherVariant = other.variants![0]!
  const cases: Array<[string, (file: ReturnType<typeof base>) => unknown, string]> = [
    ['a price that is not a number', (f) => { (f.products[3] as { price: unknown }).price = '12.50' }, 'products[3].price: must be a number'],
    ['a missing required field', (f) => { delete (f.products[0] as Partial<CatalogProduct>).name }, 'products[0].name: is required'],
    ['a missing isAvailable on a combination', (f) => { delete (f.products[2]!.combinations![1] as Partial<CatalogProduct>).isAvailable }, 'products[2].combinations[1].isAvailable: is required'],
    ['an id that is not a GUID', (f) => { f.products[1]!.id = 'c0ffee00-0000-4000-8000-00000000000g' }, 'products[1].id: must be a GUID'],
    ['a URN in place of a GUID', (f) => { f.products[1]!.id = `urn:uuid:${ESPRESSO}` }, 'products[1].id: must be a GUID'],
    ['a category id that is not a GUID', (f) => { f.products[0]!.categoryIds = ['coffee'] }, 'products[0].categoryIds[0]: must be a GUID'],
    ['a price with three decimals', (f) => { f.products[0]!.price = 12.345 }, 'products[0].price: must have at most two decimals'],
    ['a negative price', (f) => { f.products[0]!.price = -1 }, 'products[0].price: must be >= 0'],
    ['a percentage over 100', (f) => { f.products[1]!.discount!.value = 100.5 }, 'products[1].discount.value: a percentage must be at most 100'],
    ['an unknown discount type', (f) => { (f.products[1]!.discount as { type: string }).type = 'fixed' }, 'products[1].discount.type: must be one of "percentage", "amount"'],
    ['a discount ending before it starts', (f) => { f.products[1]!.discount!.endsAt = '2025-12-31T00:00:00Z' }, 'products[1].discount.endsAt: must be after startsAt'],
    ['a discount date without a UTC offset', (f) => { f.products[1]!.discount!.startsAt = '2026-01-01T00:00:00' }, 'products[1].discount.startsAt: must be an ISO 8601 date-time'],
    ['a fractional quantity', (f) => { f.products[2]!.combinations![0]!.quantity = 1.5 }, 'products[2].combinations[0].quantity: must be an integer or null'],
    ['a negative quantity', (f) => { f.products[0]!.quantity = -3 }, 'products[0].quantity: must be >= 0'],
    ['an option of another variant set', (f) => { f.products[2]!.combinations![0]!.optionIds[1] = otherVariant.options[0]!.id }, `products[2].combinations[0].optionIds[1]: option ${otherVariant.options[0]!.id} is not an option of this product's variants`],
    ['a combination missing a variant', (f) => { f.products[2]!.combinations![1]!.optionIds.pop() }, 'products[2].combinations[1].optionIds: must hold exactly one option of each of the product\'s 2 variants'],
    ['two options of one variant', (f) => { f.products[2]!.combinations![1]!.optionIds = [OPTION.black, OPTION.white] }, 'products[2].combinations[1].optionIds: must hold exactly one option of each'],
    ['two combinations with the same options', (f) => { f.products[2]!.combinations![1]!.optionIds = [OPTION.m, OPTION.black] }, 'products[2].combinations[1].optionIds: the same options as products[2].combinations[0]'],
    ['combinations without variants', (f) => { f.products[2]!.variants = [] }, 'products[2].combinations: a product with combinations must have variants'],
    ['a duplicate product id', (f) => { f.products[3]!.id = ETHIOPIA }, `products[3].id: id ${ETHIOPIA} is already used at products[0].id`],
    ['a duplicate id in another case', (f) => { f.products[3]!.id = ETHIOPIA.toUpperCase() }, 'products[3].id: id C0FFEE00-0000-4000-8000-000000000001 is already used at products[0].id'],
    ['a duplicate combination id', (f) => { f.products[2]!.combinations![1]!.id = f.products[2]!.combinations![0]!.id }, 'products[2].combinations[1].id: id bb000000-0000-4000-8000-000000000001 is already used at products[2].combinations[0].id'],
    ['a category listed twice', (f) => { f.products[0]!.categoryIds = [COFFEE, COFFEE.toUpperCase()] }, 'products[0].categoryIds[1]: category'],
    ['a blank name', (f) => { f.products[3]!.name = '   ' }, 'products[3].name: must not be blank'],
    ['a NUL character', (f) => { f.products[3]!.sku = 'A\u0000B' }, 'products[3].sku: must not contain the character U+0000'],
    ['a file that is not an object', () => 'products', '(root): must be an object'],
    ['products that is not an array', () => ({ products: {} }), 'products: must be an array'],
    // Detected only inside the transaction, after categories and brands were written.
    ['an unknown categoryId', (f) => { f.products[3]!.categoryIds = [COFFEE, '3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c99'] }, 'products[3].categoryIds[1]: no category has id 3f1c2a8e-0b7d-4c55-9a61-1e2f3a4b5c99'],
    ['an unknown brandId', (f) => { f.products[1]!.brandId = '7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c99' }, 'products[1].brandId: no brand has id 7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c99'],
    ['a combination id of another product', (f) => { f.products[2]!.combinations![0]!.id = other.combinations![0]!.id }, 'products[2].combinations[0].id: belongs to another product'],
    ['a variant id of another product', (f) => { f.products[2]!.variants![1]!.id = otherVariant.id }, 'products[2].variants[1].id: belongs to another product'],
    ['an option id of another product', (f) => {
      const file = f.products[2]!
      file.variants![1]!.options[1]!.id = otherVariant.options[0]!.id
      file.combinations!.forEach((c) => { c.optionIds = c.optionIds.map((o) => (o === OPTION.l ? otherVariant.options[0]!.id : o)) })
    }, 'products[2].variants[1].options[1].id: belongs to another product']
  ]

  const before = await snapshot()
  const shirtBefore = await getProduct(SHIRT)
  const productsBefore = await countProducts(app.database.db)
  for (const [name, mutate, expected] of cases) {
    const file = base()
    const replaced = mutate(file)
    const error = await importProducts(app, (replaced ?? file) as CatalogFile).then(() => null, (err: unknown) => err)
    t.ok(error instanceof CatalogError, `${name}: rejected as a CatalogError`)
    t.match((error as Error | null)?.message ?? '', expected, `${name}: names the path`)
    t.equal((error as Error | null)?.message.split('\n').length, 2, `${name}: one problem`)
  }
  t.strictSame(await snapshot(), before, 'every catalogue row and the catalogue version are unchanged')
  t.equal(await countProducts(app.database.db), productsBefore)
  t.strictSame(await getProduct(SHIRT), shirtBefore)
  t.throws(() => checkCatalog([]), { message: /\(root\): must be an object/ }, 'an array is not a catalogue file')
  t.equal(base().products.length, 4, 'the base file is itself valid')
  t.doesNotThrow(() => checkCatalog(base()))
})

t.test('many problems are listed up to a limit', async (t) => {
  const file = { products: Array.from({ length: 30 }, (_, i) => ({ ...makeProduct(), price: `${i}` })) }
  const error = (() => { try { checkCatalog(file) } catch (err) { return err as CatalogError } })()
  t.equal(error?.problems.length, 30)
  const lines = error!.message.split('\n')
  t.equal(lines.length, 1 + 20 + 1)
  t.equal(lines.at(-1), '  … and 10 more')
})

t.test('unknown fields are ignored', async (t) => {
  const product = { ...makeProduct({ price: 3.1 }), colour: 'teal', variants: [] }
  const file = { categories: [{ id: crypto.randomUUID(), name: 'Extra', position: 3 }], products: [product], version: 2 }
  t.strictSame(await importProducts(app, file as CatalogFile), { categories: 1, brands: 0, products: 1, created: 1, updated: 0, unchanged: 0, removed: 0 })
  t.equal((await getProduct(product.id)).price, 3.1)
})

t.test('a large file imports in chunks', async (t) => {
  const before = await countProducts(app.database.db)
  const many = Array.from({ length: 3000 }, (_, i) => {
    const options = [{ id: crypto.randomUUID(), name: 'Small' }, { id: crypto.randomUUID(), name: 'Large' }]
    return makeProduct({
      name: `Bulk ${String(i).padStart(4, '0')}`,
      price: (100 + (i % 500)) / 100,
      categoryIds: [COFFEE],
      brandId: NORTHWIND,
      ...(i % 3 === 0
        ? {
            variants: [{ id: crypto.randomUUID(), name: 'Size', options }],
            combinations: options.map((o, oi) => ({ id: crypto.randomUUID(), optionIds: [o.id], quantity: oi + 1, price: 2, isAvailable: true, discount: { type: 'amount' as const, value: 0.5 } }))
          }
        : { discount: { type: 'percentage' as const, value: 10 } })
    })
  })
  t.strictSame(await importProducts(app, many), { categories: 0, brands: 0, products: 3000, created: 3000, updated: 0, unchanged: 0, removed: 0 })
  t.equal(await countProducts(app.database.db), before + 3000)
  t.equal(await count('combinations', 'sku is null and product_id in (select id from products where name like \'Bulk %\')'), 2000)
  t.match(await getProduct(many[2999]!.id), { name: 'Bulk 2999', price: 5.99, sellPrice: 5.39 })
  t.match(await getProduct(many[1500]!.id), { name: 'Bulk 1500', quantity: 3, combinations: [{ sellPrice: 1.5 }, { sellPrice: 1.5 }] })

  // Again, changed: an upsert of every row, still no duplicates.
  for (const p of many) p.price = 7
  await importProducts(app, many)
  t.equal(await countProducts(app.database.db), before + 3000)
  t.equal(await count('combinations', 'product_id in (select id from products where name like \'Bulk %\')'), 2000)
  t.equal(await count('product_categories', 'product_id in (select id from products where name like \'Bulk %\')'), 3000)
  t.match(await getProduct(many[2000]!.id), { price: 7, sellPrice: 6.3 })
})
