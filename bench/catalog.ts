// A synthetic but plausible catalogue for the benchmarks: brand + descriptor + item names,
// SKUs and EAN-13 barcodes, ~10% of products with variants and combinations, some
// discounts and untracked stock. Deterministic for a seed, so every process of a run
// (the orchestrator, the app server) builds the same one.
import type { CatalogFile, CatalogProduct } from '../schemas/catalog-file.ts'

/** mulberry32: small, fast, good enough to spread test data. */
export function randomGenerator (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const BRANDS = ['Northwind', 'Contoso', 'Fabrikam', 'Tailspin', 'Adventure Works', 'Litware', 'Proseware', 'Wingtip',
  'Alpine Ski House', 'Coho', 'Lamna', 'Margie', 'Fourth Coffee', 'Humongous', 'Lucerne', 'Woodgrove', 'Trey',
  'Blue Yonder', 'Wide World', 'Graphic Design', 'Relecloud', 'Bellows', 'Datum', 'Nod', 'Southridge', 'Consolidated',
  'Tasmanian', 'Baltic', 'Kestrel', 'Osprey']

const DESCRIPTORS = ['Classic', 'Organic', 'Premium', 'Compact', 'Deluxe', 'Everyday', 'Vintage', 'Smart', 'Rustic',
  'Nordic', 'Urban', 'Essential', 'Signature', 'Heritage', 'Studio', 'Travel', 'Professional', 'Eco', 'Lightweight',
  'Heavy-Duty', 'Artisan', 'Select', 'Original', 'Limited', 'Midnight', 'Golden', 'Coastal', 'Alpine', 'Velvet',
  'Ceramic', 'Bamboo', 'Walnut', 'Copper', 'Granite', 'Linen', 'Merino', 'Cotton', 'Leather', 'Oak', 'Slate']

// Each item carries its SKU code, its category and, for some, the variants it comes in.
interface ItemKind { name: string, code: string, category: number, sizes?: string[], variants?: 'apparel' | 'size' | 'colour' }
const ITEMS: ItemKind[] = [
  { name: 'Espresso Beans', code: 'ESP', category: 0, sizes: ['250 g', '500 g', '1 kg'] },
  { name: 'Filter Coffee', code: 'FLT', category: 0, sizes: ['250 g', '1 kg'] },
  { name: 'Green Tea', code: 'GTE', category: 1, sizes: ['20 bags', '50 g', '100 g'] },
  { name: 'Black Tea', code: 'BTE', category: 1, sizes: ['20 bags', '100 g'] },
  { name: 'Herbal Infusion', code: 'HRB', category: 1 },
  { name: 'Coffee Mug', code: 'MUG', category: 2, sizes: ['250 ml', '350 ml'], variants: 'colour' },
  { name: 'Travel Tumbler', code: 'TMB', category: 2, sizes: ['350 ml', '500 ml'], variants: 'colour' },
  { name: 'French Press', code: 'FRP', category: 3, sizes: ['0.35 l', '1 l'] },
  { name: 'Pour-Over Dripper', code: 'DRP', category: 3 },
  { name: 'Burr Grinder', code: 'GRD', category: 3 },
  { name: 'Electric Kettle', code: 'KTL', category: 4, sizes: ['1 l', '1.7 l'] },
  { name: 'Milk Frother', code: 'FRO', category: 4 },
  { name: 'Espresso Machine', code: 'EMC', category: 4 },
  { name: 'T-Shirt', code: 'TEE', category: 5, variants: 'apparel' },
  { name: 'Hoodie', code: 'HOD', category: 5, variants: 'apparel' },
  { name: 'Apron', code: 'APR', category: 5, variants: 'colour' },
  { name: 'Cap', code: 'CAP', category: 5, variants: 'colour' },
  { name: 'Tote Bag', code: 'TOT', category: 6, variants: 'colour' },
  { name: 'Notebook', code: 'NTB', category: 6, sizes: ['A5', 'A6'] },
  { name: 'Scented Candle', code: 'CND', category: 7, sizes: ['180 g', '320 g'], variants: 'size' },
  { name: 'Throw Blanket', code: 'BLK', category: 7, variants: 'colour' },
  { name: 'Cutting Board', code: 'CUT', category: 8, variants: 'size' },
  { name: 'Chef Knife', code: 'KNF', category: 8, variants: 'size' },
  { name: 'Cast Iron Skillet', code: 'SKL', category: 8, variants: 'size' },
  { name: 'Olive Oil', code: 'OIL', category: 9, sizes: ['500 ml', '1 l'] },
  { name: 'Dark Chocolate', code: 'CHO', category: 9, sizes: ['100 g', '200 g'] },
  { name: 'Granola', code: 'GRN', category: 9, sizes: ['400 g', '750 g'] },
  { name: 'Honey Jar', code: 'HNY', category: 9, sizes: ['250 g', '500 g'] },
  { name: 'Water Bottle', code: 'BTL', category: 10, sizes: ['500 ml', '750 ml'], variants: 'colour' },
  { name: 'Yoga Mat', code: 'YGM', category: 10, variants: 'colour' },
  { name: 'Desk Lamp', code: 'LMP', category: 11, variants: 'colour' },
  { name: 'Wireless Charger', code: 'CHG', category: 11 },
  { name: 'Bluetooth Speaker', code: 'SPK', category: 11, variants: 'colour' },
  { name: 'Plant Pot', code: 'POT', category: 7, sizes: ['12 cm', '18 cm', '24 cm'] },
  { name: 'Picture Frame', code: 'FRM', category: 7, variants: 'size' }
]

const CATEGORY_NAMES = ['Coffee', 'Tea', 'Drinkware', 'Brewing', 'Appliances', 'Apparel', 'Stationery', 'Home',
  'Kitchen', 'Pantry', 'Outdoor', 'Electronics']
const COLOURS = ['Black', 'White', 'Red', 'Navy', 'Forest Green', 'Sand', 'Charcoal', 'Mustard']
const SIZES = ['XS', 'S', 'M', 'L', 'XL', 'XXL']
const DIMENSIONS = ['Small', 'Medium', 'Large', 'Extra Large']

export interface BenchCatalog {
  catalog: CatalogFile
  /** Product ids, in generation order. */
  productIds: string[]
  /** Search terms that match a few products each (the first is the showcase), with their match counts. */
  searchTerms: Array<{ term: string, matches: number }>
}

// Share of item kinds that come in variants: scales the per-product chance so that
// `withVariants` of all products get them.
const VARIANT_KINDS = ITEMS.filter((i) => i.variants).length / ITEMS.length
const SEARCH_TERMS = 100

export interface CatalogOptions {
  products: number
  seed: number
  /** Share of products with variants and combinations. */
  withVariants?: number
}

export function generateCatalog ({ products: count, seed, withVariants = 0.1 }: CatalogOptions): BenchCatalog {
  const random = randomGenerator(seed)
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1))
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
  const chance = (p: number) => random() < p
  const uuid = () => {
    const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16))
    hex[12] = '4'
    hex[16] = '89ab'[Math.floor(random() * 4)]!
    const s = hex.join('')
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`
  }
  const cents = (min: number, max: number) => int(Math.round(min * 100), Math.round(max * 100)) / 100
  const usedBarcodes = new Set<string>()
  const ean13 = () => {
    for (;;) {
      const digits = [5, 9, 0, ...Array.from({ length: 9 }, () => int(0, 9))]
      const sum = digits.reduce((s, d, i) => s + d * (i % 2 === 0 ? 1 : 3), 0)
      const code = [...digits, (10 - (sum % 10)) % 10].join('')
      if (!usedBarcodes.has(code)) {
        usedBarcodes.add(code)
        return code
      }
    }
  }
  const discount = (): CatalogProduct['discount'] => {
    const percentage = chance(0.7)
    const startsAt = chance(0.3) ? new Date(Date.UTC(2025, int(0, 11), int(1, 28))).toISOString() : null
    const endsAt = chance(0.3) ? new Date(Date.UTC(2030, int(0, 11), int(1, 28))).toISOString() : null
    return percentage
      ? { type: 'percentage', value: pick([5, 10, 15, 20, 25, 30, 40, 50]), startsAt, endsAt }
      : { type: 'amount', value: pick([1, 2, 5, 10]), startsAt, endsAt }
  }

  const categories = CATEGORY_NAMES.map((name) => ({ id: uuid(), name }))
  const brands = BRANDS.map((name) => ({ id: uuid(), name }))
  const list: CatalogProduct[] = []
  const pairs = new Map<string, number>()
  const triples = new Map<string, number>()
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  for (let i = 0; i < count; i++) {
    const item = pick(ITEMS)
    const brand = pick(brands)
    const descriptor = pick(DESCRIPTORS)
    const size = item.sizes && chance(0.8) ? ` ${pick(item.sizes)}` : ''
    const name = `${brand.name} ${descriptor} ${item.name}${size}`
    bump(pairs, `${descriptor} ${item.name}`)
    bump(triples, `${brand.name} ${descriptor} ${item.name}`)
    const sku = `${item.code}-${brand.name.slice(0, 3).toUpperCase()}-${String(i + 1).padStart(6, '0')}`
    const price = cents(item.category === 4 ? 29 : 1.5, item.category === 4 ? 899 : 89)
    const product: CatalogProduct = {
      id: uuid(),
      name,
      sku,
      barcode: chance(0.9) ? ean13() : null,
      quantity: chance(0.25) ? null : int(0, 500),
      price,
      discount: chance(0.15) ? discount() : null,
      isAvailable: chance(0.93),
      imageUrl: chance(0.8) ? `https://cdn.example.com/products/${sku.toLowerCase()}.jpg` : null,
      categoryIds: chance(0.2) ? [categories[item.category]!.id, pick(categories).id] : [categories[item.category]!.id],
      brandId: brand.id
    }
    if (item.variants && chance(withVariants / VARIANT_KINDS)) addVariants(product, item)
    list.push(product)
  }
  // Fix the categories' duplicates a second pick may have made.
  for (const p of list) p.categoryIds = [...new Set(p.categoryIds)]
  const catalog = { categories, brands, products: list }
  let terms = chooseSearchTerms(pairs, SEARCH_TERMS)
  if (terms.length < SEARCH_TERMS) terms = [...terms, ...chooseSearchTerms(triples, SEARCH_TERMS - terms.length)]
  if (terms.length === 0) terms = list.slice(0, SEARCH_TERMS).map((p) => p.sku!)
  const matches = countMatches(catalog, terms)
  return { catalog, productIds: list.map((p) => p.id), searchTerms: terms.map((term, i) => ({ term, matches: matches[i]! })) }

  function addVariants (product: CatalogProduct, item: ItemKind) {
    const dimensions: Array<{ name: string, values: string[] }> = []
    if (item.variants === 'apparel') {
      dimensions.push({ name: 'Colour', values: pickSome(COLOURS, int(2, 4)) }, { name: 'Size', values: SIZES.slice(int(0, 1), int(4, 6)) })
    } else if (item.variants === 'colour') {
      dimensions.push({ name: 'Colour', values: pickSome(COLOURS, int(2, 5)) })
    } else {
      dimensions.push({ name: 'Size', values: DIMENSIONS.slice(0, int(2, 4)) })
    }
    const variants = dimensions.map((d) => ({ id: uuid(), name: d.name, options: d.values.map((value) => ({ id: uuid(), name: value })) }))
    let combos: Array<Array<{ id: string, name: string }>> = [[]]
    for (const v of variants) combos = combos.flatMap((c) => v.options.map((o) => [...c, o]))
    product.variants = variants
    product.combinations = combos.map((options) => ({
      id: uuid(),
      optionIds: options.map((o) => o.id),
      sku: `${product.sku}-${options.map((o) => o.name.replace(/\W/g, '').slice(0, 3).toUpperCase()).join('-')}`,
      barcode: chance(0.85) ? ean13() : null,
      quantity: product.quantity === null ? null : int(0, 60),
      price: chance(0.2) ? cents(product.price, product.price * 1.3) : product.price,
      discount: chance(0.05) ? discount() : null,
      isAvailable: chance(0.9),
      imageUrl: null
    }))
  }

  function pickSome<T> (values: readonly T[], n: number): T[] {
    const copy = [...values]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
    }
    return copy.slice(0, n)
  }
}

/** What `query` is matched against: the same lower-cased texts the import indexes. */
function searchable (p: CatalogProduct): string {
  return [p.name, p.sku, p.barcode, ...(p.combinations ?? []).flatMap((c) => [c.sku, c.barcode])]
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .join('\n')
    .toLowerCase()
}

/** How many products each term matches (case-insensitive substring, as the API searches). */
export function countMatches (catalog: CatalogFile, terms: string[]): number[] {
  const texts = (catalog.products ?? []).map(searchable)
  return terms.map((term) => {
    const needle = term.toLowerCase()
    return texts.reduce((n, text) => n + (text.includes(needle) ? 1 : 0), 0)
  })
}

/**
 * Terms an integrator might type that match only a few products: "descriptor item"
 * (Walnut Coffee Mug), or with the brand in front when pairs alone match too many.
 * Closest to the middle of the range first, then alphabetical, so a seed gives one list.
 * At least 10 letters, so each has over a thousand case variants (see bench/scenarios.ts).
 */
function chooseSearchTerms (frequencies: Map<string, number>, limit: number, want = { min: 3, max: 8 }): string[] {
  const target = (want.min + want.max) / 2
  return [...frequencies]
    .filter(([term, n]) => n >= want.min && n <= want.max && term.replace(/[^a-z]/gi, '').length >= 10)
    .sort(([a, n], [b, m]) => Math.abs(n - target) - Math.abs(m - target) || (a < b ? -1 : 1))
    .slice(0, limit)
    .map(([term]) => term)
}
