import t from 'tap'
import type { App } from '../../app.ts'
import type { CatalogProduct } from '../../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, expectError, importProducts, makeKey, makeProduct } from '../helper.ts'

const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const HOUR = 3_600_000
const past = (ms = HOUR) => new Date(Date.now() - ms).toISOString()
const future = (ms = HOUR) => new Date(Date.now() + ms).toISOString()

interface ListBody { items: Array<{ id: string, name: string, [k: string]: unknown }>, page: number, pageSize: number, total: number }

function client (app: App, key: string) {
  return async (url: string) => app.inject({ url, headers: authHeaders(key) })
}

const ids = (body: ListBody) => body.items.map((p) => p.id)

// One app for the file (starting a database is the slow part); each group of tests imports
// its own products and keeps to them with its own category or unique names.
const app = await buildTestApp(t)
const { key } = await makeKey(app, ['products:list', 'products:find'])
const get = client(app, key)
const category = (n: number) => ({ id: uuid(0xca7000 + n), name: `Category ${n}` })

t.test('pagination', async (t) => {
  const P = category(1)
  // Names sort in a known order: Item 01 … Item 30.
  const all = Array.from({ length: 30 }, (_, i) => makeProduct({ name: `Item ${String(i + 1).padStart(2, '0')}`, categoryIds: [P.id] }))
  await importProducts(app, { categories: [P], products: [...all].reverse() })
  const names = all.map((p) => p.name)
  const list = async (params = '') => get(`/external/v1/products?categoryIds=${P.id}${params}`)

  t.test('the first page holds 25 in the envelope', async (t) => {
    const res = await list()
    t.equal(res.statusCode, 200)
    const body = res.json<ListBody>()
    t.same(Object.keys(body).sort(), ['items', 'nextCursor', 'page', 'pageSize', 'total'])
    t.match(body, { page: 1, pageSize: 25, total: 30 })
    t.same(body.items.map((p) => p.name), names.slice(0, 25))
  })

  t.test('the second page holds the remaining 5', async (t) => {
    const body = (await list('&page=2')).json<ListBody>()
    t.match(body, { page: 2, pageSize: 25, total: 30 })
    t.same(body.items.map((p) => p.name), names.slice(25))
  })

  for (const page of ['0', '-3']) {
    t.test(`page=${page} is treated as 1`, async (t) => {
      const res = await list(`&page=${page}`)
      t.equal(res.statusCode, 200)
      const body = res.json<ListBody>()
      t.match(body, { page: 1, pageSize: 25, total: 30 })
      t.same(body.items.map((p) => p.name), names.slice(0, 25))
    })
  }

  t.test('a page past the end is empty with the requested page and the real total', async (t) => {
    const res = await list('&page=7')
    t.equal(res.statusCode, 200)
    t.same(res.json(), { items: [], page: 7, pageSize: 25, total: 30, nextCursor: null })
  })

  t.test('a very large page is still an empty page', async (t) => {
    const res = await list('&page=1000000000')
    t.equal(res.statusCode, 200)
    t.same(res.json(), { items: [], page: 1000000000, pageSize: 25, total: 30, nextCursor: null })
  })

  for (const page of ['1.5', 'abc', '']) {
    t.test(`page=${page} is a validation error`, async (t) => {
      const res = await list(`&page=${page}`)
      t.equal(res.statusCode, 400)
      t.match(res.json(), {
        error: 'validation_failed',
        message: /page/,
        requestId: String,
        details: [{ path: 'query.page', message: String }]
      })
    })
  }

  t.test('nothing matching is an empty page with total 0', async (t) => {
    const res = await get('/external/v1/products?query=no-such-thing-anywhere')
    t.equal(res.statusCode, 200)
    t.same(res.json(), { items: [], page: 1, pageSize: 25, total: 0, nextCursor: null })
  })
})

t.test('filters, search and sort', async (t) => {
  const C1 = uuid(0xc1)
  const C2 = uuid(0xc2)
  const C3 = uuid(0xc3)
  const B1 = uuid(0xb1)
  const B2 = uuid(0xb2)
  const alpha = makeProduct({ name: 'Alpha Widget', sku: 'ALPHA-1', barcode: '1111111111111', categoryIds: [C1], brandId: B1 })
  const beta = makeProduct({ name: 'beta gadget', sku: 'BETA-1', isAvailable: false, categoryIds: [C2], brandId: B2 })
  const gamma = makeProduct({
    name: 'Gamma Thing',
    sku: null,
    categoryIds: [C1, C2],
    variants: [{ id: uuid(0xa1), name: 'Color', options: [{ id: uuid(0xa2), name: 'Red' }, { id: uuid(0xa3), name: 'Blue' }] }],
    combinations: [
      { id: uuid(0xa4), optionIds: [uuid(0xa2)], sku: 'GAMMA-RED', barcode: '2222222222222', price: 10, isAvailable: true },
      { id: uuid(0xa5), optionIds: [uuid(0xa3)], sku: 'GAMMA-BLUE', barcode: null, price: 10, isAvailable: true }
    ]
  })
  // Its combination shares the product's SKU and barcode: still one match, not two.
  const epsilon = makeProduct({
    name: 'Epsilon',
    sku: 'EPS',
    barcode: '3333333333333',
    categoryIds: [C3],
    variants: [{ id: uuid(0xa6), name: 'Size', options: [{ id: uuid(0xa7), name: 'One' }] }],
    combinations: [{ id: uuid(0xa8), optionIds: [uuid(0xa7)], sku: 'EPS', barcode: '3333333333333', price: 10, isAvailable: true }]
  })
  const delta = makeProduct({ name: 'Delta 100% pure_cotton', sku: 'D_1', categoryIds: [C3] })
  const decoy = makeProduct({ name: 'Delta 1000 purexcotton', sku: 'DX1', categoryIds: [C3] })
  await importProducts(app, {
    categories: [{ id: C1, name: 'One' }, { id: C2, name: 'Two' }, { id: C3, name: 'Three' }],
    brands: [{ id: B1, name: 'B one' }, { id: B2, name: 'B two' }],
    products: [alpha, beta, gamma, delta, decoy, epsilon]
  })
  const everything = (await get('/external/v1/products')).json<ListBody>()
  const groupCategories = `categoryIds=${C1},${C2},${C3}`

  // Each case: the query string and the exact set of products it returns.
  const cases: Array<[string, string, CatalogProduct[]]> = [
    ['isAvailable=true', `isAvailable=true&${groupCategories}`, [alpha, gamma, delta, decoy, epsilon]],
    ['isAvailable=false', `isAvailable=false&${groupCategories}`, [beta]],
    ['one category', `categoryIds=${C1}`, [alpha, gamma]],
    ['several categories are any-of', `categoryIds=${C1},${C3}`, [alpha, gamma, delta, decoy, epsilon]],
    ['an upper-case category GUID', `categoryIds=${C2.toUpperCase()}`, [beta, gamma]],
    ['valid and invalid category GUIDs use the valid ones', `categoryIds=nope,${C3},12345`, [delta, decoy, epsilon]],
    ['one brand', `brandIds=${B1}`, [alpha]],
    ['several brands are any-of', `brandIds=${B1},${B2}`, [alpha, beta]],
    ['valid and invalid brand GUIDs use the valid ones', `brandIds=${B2},bad`, [beta]],
    ['sku of a product', 'sku=ALPHA-1', [alpha]],
    ['sku is exact, not a substring', 'sku=ALPHA', []],
    ['sku is exact, not case-insensitive', 'sku=alpha-1', []],
    ['sku of a combination', 'sku=GAMMA-RED', [gamma]],
    ['barcode of a product', 'barcode=1111111111111', [alpha]],
    ['barcode is exact', 'barcode=111111111111', []],
    ['barcode of a combination', 'barcode=2222222222222', [gamma]],
    ['a SKU on the product and its combination matches once', 'sku=EPS', [epsilon]],
    ['a barcode on the product and its combination matches once', 'barcode=3333333333333', [epsilon]],
    ['an empty sku is no filter', `sku=&${groupCategories}`, [alpha, beta, gamma, delta, decoy, epsilon]],
    ['an empty barcode is no filter', `barcode=&${groupCategories}`, [alpha, beta, gamma, delta, decoy, epsilon]],
    ['an empty query is no filter', `query=&${groupCategories}`, [alpha, beta, gamma, delta, decoy, epsilon]],
    ['a query of spaces is no filter', `query=%20%20&${groupCategories}`, [alpha, beta, gamma, delta, decoy, epsilon]],
    ['query in the name, any case', 'query=WIDGET', [alpha]],
    ['query in the middle of the name', 'query=a%20gad', [beta]],
    ['query in the SKU', 'query=eta-1', [beta]],
    ['query in the barcode', 'query=11111111', [alpha]],
    ['query in a combination SKU', 'query=gamma-blue', [gamma]],
    ['query in a combination barcode', 'query=22222', [gamma]],
    ['% in query is literal', 'query=100%25', [delta]],
    ['_ in query is literal', 'query=pure_cotton', [delta]],
    ['_ in a SKU query is literal', 'query=d_1', [delta]],
    ['filters combine', `isAvailable=true&categoryIds=${C2}`, [gamma]],
    ['query and category combine', `query=delta&categoryIds=${C3}&sku=DX1`, [decoy]]
  ]
  for (const [name, qs, expected] of cases) {
    t.test(name, async (t) => {
      const res = await get(`/external/v1/products?${qs}`)
      t.equal(res.statusCode, 200, qs)
      const body = res.json<ListBody>()
      t.same(ids(body).sort(), expected.map((p) => p.id).sort(), qs)
      t.equal(body.total, expected.length)
    })
  }

  for (const qs of ['categoryIds=nope,12345,', 'categoryIds=', 'brandIds=bad', 'brandIds=bad,%20,x']) {
    t.test(`only invalid GUIDs are no filter: ${qs}`, async (t) => {
      const res = await get(`/external/v1/products?${qs}`)
      t.equal(res.statusCode, 200)
      t.same(res.json(), everything)
      t.ok(everything.total >= 6)
    })
  }

  t.test('isAvailable alone filters the whole catalogue', async (t) => {
    const available = (await get('/external/v1/products?isAvailable=true')).json<ListBody>()
    t.ok(available.items.every((p) => p.isAvailable === true))
    t.ok(ids(available).includes(alpha.id))
    t.notOk(ids(available).includes(beta.id))
    const unavailable = (await get('/external/v1/products?isAvailable=false')).json<ListBody>()
    t.ok(unavailable.items.every((p) => p.isAvailable === false))
    t.ok(ids(unavailable).includes(beta.id))
    t.equal(available.total + unavailable.total, everything.total)
  })

  t.test('isAvailable that is not true or false is a validation error', async (t) => {
    for (const value of ['yes', '1', 'TRUE']) {
      const res = await get(`/external/v1/products?isAvailable=${value}`)
      t.equal(res.statusCode, 400, value)
      t.match(res.json(), { error: 'validation_failed', requestId: String, details: [{ path: 'query.isAvailable', message: String }] })
    }
  })

  t.test('the list is sorted by name case-insensitively, then id', async (t) => {
    const S = category(2)
    const products = [
      makeProduct({ id: uuid(5), name: 'cherry', categoryIds: [S.id] }),
      makeProduct({ id: uuid(4), name: 'Banana', categoryIds: [S.id] }),
      makeProduct({ id: uuid(3), name: 'apple', categoryIds: [S.id] }),
      makeProduct({ id: uuid(1), name: 'APPLE', categoryIds: [S.id] }),
      makeProduct({ id: uuid(2), name: 'Apple', categoryIds: [S.id] }),
      makeProduct({ id: uuid(6), name: 'apricot', categoryIds: [S.id] })
    ]
    await importProducts(app, { categories: [S], products })
    const body = (await get(`/external/v1/products?categoryIds=${S.id}`)).json<ListBody>()
    t.same(body.items.map((p) => [p.name, p.id]), [
      ['APPLE', uuid(1)], ['Apple', uuid(2)], ['apple', uuid(3)], ['apricot', uuid(6)], ['Banana', uuid(4)], ['cherry', uuid(5)]
    ])
  })
})

t.test('get a product', async (t) => {
  const shirt: CatalogProduct = {
    id: uuid(0x100),
    name: 'Barista T-shirt',
    sku: 'APP-TEE',
    barcode: '4006381333931',
    price: 20,
    discount: { type: 'percentage', value: 10, startsAt: past(), endsAt: null },
    isAvailable: true,
    imageUrl: 'https://cdn.example.com/img/tee.jpg',
    variants: [
      { id: uuid(0x110), name: 'Color', options: [{ id: uuid(0x111), name: 'Black' }, { id: uuid(0x112), name: 'White' }] },
      { id: uuid(0x120), name: 'Size', options: [{ id: uuid(0x121), name: 'M' }] }
    ],
    combinations: [
      // Option ids given out of variant order: the response keeps the variants' order.
      {
        id: uuid(0x130),
        optionIds: [uuid(0x121), uuid(0x111)],
        sku: 'APP-TEE-BLK-M',
        barcode: '4006381333948',
        quantity: 3,
        price: 21.5,
        discount: { type: 'amount', value: 5, startsAt: null, endsAt: future() },
        isAvailable: true,
        imageUrl: 'https://cdn.example.com/img/tee-black.jpg'
      },
      { id: uuid(0x131), optionIds: [uuid(0x112), uuid(0x121)], quantity: 4, price: 1.15, isAvailable: false }
    ]
  }
  const bare = makeProduct({ id: uuid(0x200), name: 'Bare', sku: null, quantity: null, price: 3 })
  const untrackedCombination = makeProduct({
    id: uuid(0x300),
    variants: [{ id: uuid(0x310), name: 'Size', options: [{ id: uuid(0x311), name: 'S' }, { id: uuid(0x312), name: 'L' }] }],
    combinations: [
      { id: uuid(0x320), optionIds: [uuid(0x311)], quantity: 5, price: 1, isAvailable: true },
      { id: uuid(0x321), optionIds: [uuid(0x312)], quantity: null, price: 1, isAvailable: true }
    ]
  })
  await importProducts(app, [shirt, bare, untrackedCombination])

  t.test('200 with every field of the documented shape', async (t) => {
    const res = await get(`/external/v1/products/${shirt.id}`)
    t.equal(res.statusCode, 200)
    const { updatedAt, ...body } = res.json()
    t.match(updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    t.same(body, {
      id: shirt.id,
      name: 'Barista T-shirt',
      sku: 'APP-TEE',
      barcode: '4006381333931',
      categoryIds: [],
      brandId: null,
      quantity: 7,
      price: 20,
      sellPrice: 18,
      isAvailable: true,
      productImageUrl: 'https://cdn.example.com/img/tee.jpg',
      variants: [
        { id: uuid(0x110), name: 'Color', options: [{ id: uuid(0x111), name: 'Black' }, { id: uuid(0x112), name: 'White' }] },
        { id: uuid(0x120), name: 'Size', options: [{ id: uuid(0x121), name: 'M' }] }
      ],
      combinations: [
        {
          id: uuid(0x130),
          optionIds: [uuid(0x111), uuid(0x121)],
          sku: 'APP-TEE-BLK-M',
          barcode: '4006381333948',
          quantity: 3,
          price: 21.5,
          sellPrice: 16.5,
          isAvailable: true,
          imageUrl: 'https://cdn.example.com/img/tee-black.jpg'
        },
        {
          // No discount of its own: the product's 10% applies, half-up (1.035 → 1.04).
          id: uuid(0x131),
          optionIds: [uuid(0x112), uuid(0x121)],
          sku: null,
          barcode: null,
          quantity: 4,
          price: 1.15,
          sellPrice: 1.04,
          isAvailable: false,
          imageUrl: null
        }
      ]
    })
  })

  t.test('unknown values are null, never absent', async (t) => {
    const res = await get(`/external/v1/products/${bare.id}`)
    t.equal(res.statusCode, 200)
    const { updatedAt, ...body } = res.json()
    t.type(updatedAt, 'string')
    t.same(body, {
      id: bare.id,
      name: 'Bare',
      sku: null,
      barcode: null,
      categoryIds: [],
      brandId: null,
      quantity: null,
      price: 3,
      sellPrice: 3,
      isAvailable: true,
      productImageUrl: null,
      variants: [],
      combinations: []
    })
  })

  t.test('the quantity of a product is null when any combination is untracked', async (t) => {
    const body = (await get(`/external/v1/products/${untrackedCombination.id}`)).json()
    t.equal(body.quantity, null)
    t.same(body.combinations.map((c: { quantity: number | null }) => c.quantity), [5, null])
  })

  t.test('an upper-case GUID finds the product', async (t) => {
    const res = await get(`/external/v1/products/${shirt.id.toUpperCase()}`)
    t.equal(res.statusCode, 200)
    t.equal(res.json().id, shirt.id)
  })

  for (const bad of ['abc', '123', `${shirt.id}x`, `{${shirt.id}}`, '00000000-0000-4000-8000-00000000010g']) {
    t.test(`400 invalid_product_id for ${bad}`, async (t) => {
      const res = await get(`/external/v1/products/${encodeURIComponent(bad)}`)
      expectError(t, res, 400, 'invalid_product_id')
    })
  }

  t.test('404 product_not_found for an unknown GUID', async (t) => {
    const res = await get(`/external/v1/products/${uuid(0xdead)}`)
    expectError(t, res, 404, 'product_not_found')
  })
})

t.test('sellPrice', async (t) => {
  const D = category(3)
  // [label, price, discount, expected sellPrice]
  const cases: Array<[string, number, CatalogProduct['discount'], number]> = [
    ['no discount', 20, null, 20],
    ['an active percentage', 20, { type: 'percentage', value: 25, startsAt: past(), endsAt: future() }, 15],
    ['an expired percentage', 20, { type: 'percentage', value: 25, startsAt: past(2 * HOUR), endsAt: past() }, 20],
    ['a future percentage', 20, { type: 'percentage', value: 25, startsAt: future(), endsAt: null }, 20],
    ['an active amount', 20, { type: 'amount', value: 5.5, startsAt: null, endsAt: future() }, 14.5],
    ['an expired amount', 20, { type: 'amount', value: 5.5, startsAt: null, endsAt: past() }, 20],
    ['a future amount', 20, { type: 'amount', value: 5.5, startsAt: future(), endsAt: future(2 * HOUR) }, 20],
    ['half-up rounding: 1.15 at 50%', 1.15, { type: 'percentage', value: 50, startsAt: null, endsAt: null }, 0.58],
    ['19.99 at 10% is 17.99', 19.99, { type: 'percentage', value: 10, startsAt: null, endsAt: null }, 17.99],
    ['a fractional percentage', 10, { type: 'percentage', value: 33.33, startsAt: null, endsAt: null }, 6.67],
    ['100% is free', 10, { type: 'percentage', value: 100, startsAt: null, endsAt: null }, 0],
    ['an amount larger than the price gives 0', 5, { type: 'amount', value: 7.5, startsAt: null, endsAt: null }, 0]
  ]
  const products = cases.map(([label, price, discount]) => makeProduct({ name: label, price, discount, categoryIds: [D.id] }))
  await importProducts(app, { categories: [D], products })
  cases.forEach(([label, price, , expected], i) => {
    t.test(label, async (t) => {
      const res = await get(`/external/v1/products/${products[i]!.id}`)
      t.equal(res.statusCode, 200)
      t.equal(res.json().price, price)
      t.equal(res.json().sellPrice, expected)
    })
  })

  t.test('the list carries the same prices', async (t) => {
    const byId = new Map((await get(`/external/v1/products?categoryIds=${D.id}`)).json<ListBody>().items.map((p) => [p.id, p]))
    cases.forEach(([label, , , expected], i) => t.equal(byId.get(products[i]!.id)?.sellPrice, expected, label))
  })

  t.test('a combination with no discount of its own takes the product\'s; its own wins otherwise', async (t) => {
    const product = makeProduct({
      price: 40,
      discount: { type: 'percentage', value: 50, startsAt: null, endsAt: null },
      variants: [{ id: uuid(0x400), name: 'Size', options: [{ id: uuid(0x401), name: 'S' }, { id: uuid(0x402), name: 'L' }, { id: uuid(0x403), name: 'XL' }] }],
      combinations: [
        { id: uuid(0x410), optionIds: [uuid(0x401)], price: 9.99, isAvailable: true },
        { id: uuid(0x411), optionIds: [uuid(0x402)], price: 30, discount: { type: 'amount', value: 1, startsAt: null, endsAt: null }, isAvailable: true },
        // Its own discount is not active yet, so no discount applies: not the product's either.
        { id: uuid(0x412), optionIds: [uuid(0x403)], price: 30, discount: { type: 'amount', value: 1, startsAt: future(), endsAt: null }, isAvailable: true }
      ]
    })
    await importProducts(app, [product])
    const body = (await get(`/external/v1/products/${product.id}`)).json()
    t.equal(body.sellPrice, 20)
    t.same(body.combinations.map((c: { price: number, sellPrice: number }) => [c.price, c.sellPrice]), [[9.99, 5], [30, 29], [30, 30]])
  })
})

t.test('money comes back exactly', async (t) => {
  const M = category(4)
  const prices = [0.1, 0.2, 0.3, 19.99, 1234567.89, 9999999999.99, 0.01, 1.1, 100]
  const products = prices.map((price) => makeProduct({ price, name: `Money ${price}`, categoryIds: [M.id] }))
  // 0.1 + 0.2 is the classic artefact; the discount keeps the sell price on two decimals too.
  const discounted = makeProduct({ name: 'Money discounted', price: 0.3, discount: { type: 'amount', value: 0.1, startsAt: null, endsAt: null }, categoryIds: [M.id] })
  await importProducts(app, { categories: [M], products: [...products, discounted] })

  for (const [i, price] of prices.entries()) {
    const res = await get(`/external/v1/products/${products[i]!.id}`)
    t.equal(res.json().price, price)
    t.equal(res.json().sellPrice, price)
    t.match(res.body, `"price":${String(price)},"sellPrice":${String(price)},`)
  }
  const res = await get(`/external/v1/products/${discounted.id}`)
  t.equal(res.json().sellPrice, 0.2)
  t.match(res.body, '"price":0.3,"sellPrice":0.2,')

  const list = await get(`/external/v1/products?categoryIds=${M.id}`)
  t.equal(list.json<ListBody>().total, prices.length + 1)
  t.notMatch(list.body, /"(price|sellPrice)":-?\d+\.\d{3,}/, 'no amount has more than two decimals')
  t.notMatch(list.body, /"(price|sellPrice)":-?\d+(\.\d+)?e/i, 'no exponent notation')
  t.match(list.body, '"price":1234567.89,')
  t.match(list.body, '"price":9999999999.99,')
})
