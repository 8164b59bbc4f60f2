// The demo catalogue `storefront catalog demo` (and a fresh embedded `npm start`) loads: a
// small coffee shop whose fixed ids make it the same store on every machine. Discount
// windows are placed around the current UTC day, so the demo always shows an active, a
// future and an expired discount.
import type { CatalogFile, CatalogProduct } from '../schemas/catalog-file.ts'

type Combination = NonNullable<CatalogProduct['combinations']>[number]
type Discount = NonNullable<CatalogProduct['discount']>

// Fixed GUIDs: one leading group per kind of record, the record's number in the last group.
const guid = (kind: string, n: number) => `${kind}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

/** EAN-13 from twelve digits: the GS1 check digit weighs digits alternately 1 and 3. */
function ean13 (first12: string): string {
  const sum = [...first12].reduce((total, digit, i) => total + Number(digit) * (i % 2 === 0 ? 1 : 3), 0)
  return `${first12}${(10 - (sum % 10)) % 10}`
}

const CATEGORY = {
  coffee: guid('ca7e6000', 1),
  tea: guid('ca7e6000', 2),
  brewing: guid('ca7e6000', 3),
  apparel: guid('ca7e6000', 4),
  accessories: guid('ca7e6000', 5)
}
const BRAND = {
  northwind: guid('b7a4d000', 1),
  kettleLeaf: guid('b7a4d000', 2),
  brewline: guid('b7a4d000', 3)
}

interface VariantSpec { name: string, options: string[] }

interface ProductSpec {
  name: string
  sku: string
  price: number
  /** null: stock not tracked. Ignored for a product with variants (stock lives on combinations). */
  quantity?: number | null
  categories: Array<keyof typeof CATEGORY>
  brand?: keyof typeof BRAND
  /** Gets an EAN-13 barcode. */
  barcode?: boolean
  image?: boolean
  isAvailable?: boolean
  discount?: Discount
  variants?: VariantSpec[]
  /** Per combination (option names in variant order): what differs from the product. */
  combination?: (options: string[]) => Partial<Pick<Combination, 'price' | 'quantity' | 'isAvailable' | 'discount'>>
}

const DAY = 24 * 60 * 60 * 1000

function cartesian (lists: string[][]): string[][] {
  return lists.reduce<string[][]>((acc, list) => acc.flatMap((prefix) => list.map((item) => [...prefix, item])), [[]])
}

const slug = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
const skuPart = (option: string) => option.toUpperCase().replace(/[^A-Z0-9]+/g, '').slice(0, 3)

function products (today: number): ProductSpec[] {
  const at = (days: number) => new Date(today + days * DAY).toISOString()
  const active = (type: Discount['type'], value: number): Discount => ({ type, value, startsAt: at(-7), endsAt: at(30) })
  const sizes = { name: 'Size', options: ['S', 'M', 'L', 'XL'] }

  return [
    // Coffee
    { name: 'Ethiopia Yirgacheffe 250 g', sku: 'COF-ETH-250', price: 12.5, quantity: 40, categories: ['coffee'], brand: 'northwind', barcode: true, image: true },
    { name: 'Colombia Huila 250 g', sku: 'COF-COL-250', price: 11.9, quantity: 35, categories: ['coffee'], brand: 'northwind', barcode: true, image: true },
    { name: 'Kenya AA 250 g', sku: 'COF-KEN-250', price: 14.75, quantity: 0, categories: ['coffee'], brand: 'northwind', barcode: true, image: true },
    { name: 'Guatemala Antigua 250 g', sku: 'COF-GUA-250', price: 12, quantity: 22, categories: ['coffee'], brand: 'northwind', barcode: true, image: true, discount: active('percentage', 10) },
    { name: 'Espresso Blend 1 kg', sku: 'COF-ESP-1000', price: 29.99, quantity: null, categories: ['coffee'], brand: 'northwind', barcode: true, discount: { type: 'percentage', value: 20, startsAt: at(-30), endsAt: null } },
    { name: 'Decaf Swiss Water 250 g', sku: 'COF-DEC-250', price: 13.25, quantity: 18, categories: ['coffee'], brand: 'northwind', barcode: true, image: true },
    { name: 'Sumatra Mandheling 500 g', sku: 'COF-SUM-500', price: 21.4, quantity: 9, categories: ['coffee'], brand: 'northwind', barcode: true, discount: { type: 'percentage', value: 15, startsAt: at(-45), endsAt: at(-3) } },
    { name: 'Cold Brew Blend 1 kg', sku: 'COF-CBR-1000', price: 24.5, quantity: 14, categories: ['coffee'], brand: 'northwind', barcode: true, image: true, discount: { type: 'amount', value: 4, startsAt: at(14), endsAt: at(44) } },
    { name: 'Holiday Blend 250 g', sku: 'COF-HOL-250', price: 15, quantity: 0, categories: ['coffee'], brand: 'northwind', barcode: true, image: true, isAvailable: false },
    {
      name: 'House Blend',
      sku: 'COF-HSE',
      price: 10.5,
      categories: ['coffee'],
      brand: 'northwind',
      image: true,
      variants: [{ name: 'Size', options: ['250 g', '1 kg'] }, { name: 'Grind', options: ['Whole bean', 'Filter', 'Espresso'] }],
      combination: ([size, grind]) => ({
        price: size === '1 kg' ? 32 : 10.5,
        quantity: size === '1 kg' ? (grind === 'Espresso' ? 0 : 8) : 25
      })
    },

    // Tea
    { name: 'Sencha Green Tea 100 g', sku: 'TEA-SEN-100', price: 9.8, quantity: 30, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true },
    { name: 'Earl Grey 125 g', sku: 'TEA-EGR-125', price: 8.5, quantity: null, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true },
    { name: 'Darjeeling First Flush 100 g', sku: 'TEA-DAR-100', price: 16.9, quantity: 6, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true, discount: active('amount', 2) },
    { name: 'Rooibos Vanilla 100 g', sku: 'TEA-ROO-100', price: 7.25, quantity: 0, categories: ['tea'], brand: 'kettleLeaf', barcode: true },
    { name: 'Jasmine Pearls 50 g', sku: 'TEA-JAS-050', price: 18.5, quantity: 12, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true },
    { name: 'Chai Masala 200 g', sku: 'TEA-CHA-200', price: 10.95, quantity: 25, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true },
    { name: 'Matcha Ceremonial 30 g', sku: 'TEA-MAT-030', price: 24, quantity: 8, categories: ['tea'], brand: 'kettleLeaf', barcode: true, image: true },

    // Brewing equipment
    { name: 'Pour-over Dripper, ceramic', sku: 'EQP-DRP-CER', price: 24.9, quantity: 15, categories: ['brewing'], brand: 'brewline', barcode: true, image: true },
    { name: 'Paper Filters, 100 pcs', sku: 'EQP-FLT-100', price: 5.49, quantity: null, categories: ['brewing'], brand: 'brewline', barcode: true },
    { name: 'Glass Server 600 ml', sku: 'EQP-SRV-600', price: 19.95, quantity: 10, categories: ['brewing'], brand: 'brewline', barcode: true, image: true },
    { name: 'French Press 1 l', sku: 'EQP-FRP-1000', price: 34.5, quantity: 7, categories: ['brewing'], brand: 'brewline', barcode: true, image: true, discount: active('percentage', 15) },
    { name: 'Gooseneck Kettle 1 l', sku: 'EQP-KTL-1000', price: 59, quantity: 4, categories: ['brewing', 'tea'], brand: 'brewline', barcode: true, image: true },
    { name: 'Digital Scale with Timer', sku: 'EQP-SCL-TMR', price: 39.99, quantity: 0, categories: ['brewing'], brand: 'brewline', barcode: true, image: true },
    { name: 'Moka Pot, 6 cups', sku: 'EQP-MOK-6', price: 32, quantity: 5, categories: ['brewing'], brand: 'brewline', barcode: true, image: true, isAvailable: false },
    {
      name: 'Burr Grinder',
      sku: 'EQP-GRN',
      price: 129,
      categories: ['brewing'],
      brand: 'brewline',
      image: true,
      discount: { type: 'percentage', value: 10, startsAt: at(-60), endsAt: at(-10) },
      variants: [{ name: 'Color', options: ['Black', 'White', 'Copper'] }],
      combination: ([color]) => color === 'Copper'
        ? { price: 139, quantity: 3, discount: active('amount', 10) }
        : { quantity: color === 'White' ? 0 : 6 }
    },

    // Apparel
    {
      name: 'Barista T-shirt',
      sku: 'APP-TEE',
      price: 20,
      categories: ['apparel'],
      brand: 'northwind',
      image: true,
      variants: [{ name: 'Color', options: ['Black', 'White', 'Olive'] }, sizes],
      combination: ([color, size]) => ({
        price: size === 'XL' ? 22 : 20,
        quantity: color === 'Olive' && size === 'S' ? 0 : ({ S: 4, M: 9, L: 7, XL: 3 } as Record<string, number>)[size!]!,
        isAvailable: !(color === 'White' && size === 'XL')
      })
    },
    {
      name: 'Roaster Hoodie',
      sku: 'APP-HOOD',
      price: 49,
      categories: ['apparel'],
      brand: 'northwind',
      image: true,
      variants: [sizes],
      // Made to order in XL: its stock is not tracked, so the product's quantity is null.
      combination: ([size]) => ({ quantity: size === 'XL' ? null : 5 })
    },
    {
      name: 'Canvas Apron',
      sku: 'APP-APR',
      price: 35,
      categories: ['apparel', 'accessories'],
      brand: 'brewline',
      image: true,
      discount: active('amount', 5),
      variants: [{ name: 'Color', options: ['Navy', 'Sand'] }],
      combination: ([color]) => ({ quantity: color === 'Navy' ? 11 : 2 })
    },
    { name: 'Knit Beanie', sku: 'APP-BEA', price: 18, quantity: 20, categories: ['apparel'], brand: 'northwind', barcode: true, image: true },
    { name: 'Logo Cap', sku: 'APP-CAP', price: 22.5, quantity: 0, categories: ['apparel'], brand: 'northwind', barcode: true, image: true },

    // Accessories
    { name: 'Ceramic Mug 350 ml', sku: 'ACC-MUG-350', price: 14, quantity: 40, categories: ['accessories'], brand: 'northwind', barcode: true, image: true },
    {
      name: 'Travel Tumbler 470 ml',
      sku: 'ACC-TMB-470',
      price: 27.5,
      categories: ['accessories'],
      brand: 'brewline',
      image: true,
      variants: [{ name: 'Color', options: ['Steel', 'Matte Black'] }],
      combination: ([color]) => ({ price: color === 'Matte Black' ? 29.99 : 27.5, quantity: color === 'Steel' ? 16 : 9 })
    },
    { name: 'Coffee Storage Canister', sku: 'ACC-CAN-500', price: 22, quantity: 12, categories: ['accessories', 'coffee'], brand: 'brewline', barcode: true, image: true },
    { name: 'Tea Infuser, stainless', sku: 'ACC-INF-STL', price: 6.9, quantity: null, categories: ['accessories', 'tea'], brand: 'kettleLeaf', barcode: true },
    { name: 'Gift Card 25', sku: 'ACC-GFT-25', price: 25, quantity: null, categories: ['accessories'] },
    { name: 'Tasting Notebook', sku: 'ACC-NBK', price: 9.5, quantity: 0, categories: ['accessories'], barcode: true, image: true },
    { name: 'Cupping Spoon', sku: 'ACC-SPN', price: 12.99, quantity: 17, categories: ['accessories', 'brewing'], brand: 'brewline', barcode: true }
  ]
}

/**
 * A realistic small catalogue: 5 categories, 3 brands, 37 products with active, future and
 * expired discounts, stock that is out, tracked or untracked, unavailable products, and
 * variants with combinations (one with a discount of its own).
 */
export function demoCatalog (now: Date = new Date()): CatalogFile {
  const today = Math.floor(now.getTime() / DAY) * DAY
  let barcodes = 0
  let variantIds = 0
  let optionIds = 0
  let combinationIds = 0
  // GS1 company prefix 4006381 with a five-digit item reference.
  const nextBarcode = () => ean13(`4006381${String(++barcodes).padStart(5, '0')}`)

  return {
    categories: [
      { id: CATEGORY.coffee, name: 'Coffee' },
      { id: CATEGORY.tea, name: 'Tea' },
      { id: CATEGORY.brewing, name: 'Brewing equipment' },
      { id: CATEGORY.apparel, name: 'Apparel' },
      { id: CATEGORY.accessories, name: 'Accessories' }
    ],
    brands: [
      { id: BRAND.northwind, name: 'Northwind Roasters' },
      { id: BRAND.kettleLeaf, name: 'Kettle & Leaf' },
      { id: BRAND.brewline, name: 'Brewline' }
    ],
    products: products(today).map((spec, index): CatalogProduct => {
      const image = spec.image ? `https://cdn.example.com/demo/${slug(spec.name)}.jpg` : null
      const variants = (spec.variants ?? []).map((v) => ({
        id: guid('d3e0a000', ++variantIds),
        name: v.name,
        options: v.options.map((name) => ({ id: guid('d3e0b000', ++optionIds), name }))
      }))
      const combinations = variants.length === 0
        ? []
        : cartesian(variants.map((v) => v.options.map((o) => o.name))).map((names): Combination => {
          const own = spec.combination?.(names) ?? {}
          return {
            id: guid('d3e0c000', ++combinationIds),
            optionIds: names.map((name, vi) => variants[vi]!.options.find((o) => o.name === name)!.id),
            sku: `${spec.sku}-${names.map(skuPart).join('-')}`,
            barcode: nextBarcode(),
            quantity: own.quantity === undefined ? null : own.quantity,
            price: own.price ?? spec.price,
            ...(own.discount ? { discount: own.discount } : {}),
            isAvailable: own.isAvailable ?? spec.isAvailable ?? true,
            imageUrl: null
          }
        })
      return {
        id: guid('d3e00000', index + 1),
        name: spec.name,
        sku: spec.sku,
        barcode: spec.barcode ? nextBarcode() : null,
        ...(variants.length === 0 ? { quantity: spec.quantity ?? null } : {}),
        price: spec.price,
        ...(spec.discount ? { discount: spec.discount } : {}),
        isAvailable: spec.isAvailable ?? true,
        imageUrl: image,
        categoryIds: spec.categories.map((c) => CATEGORY[c]),
        brandId: spec.brand ? BRAND[spec.brand] : null,
        ...(variants.length > 0 ? { variants, combinations } : {})
      }
    })
  }
}
