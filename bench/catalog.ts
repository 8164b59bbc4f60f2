// A synthetic but plausible catalogue for the benchmarks: names composed from word lists
// (brand, adjective, material, item, size, model), so that any 3–6 letter piece of a name
// finds a varied number of products; SKUs and EAN-13 barcodes; about 20% of products with
// variants and combinations; some discounts, untracked stock and unavailable products.
// Deterministic for a seed, so every process of a run (the orchestrator, the app server
// with PGlite) builds the same one.
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

const BRANDS = ['Northwind', 'Contoso', 'Fabrikam', 'Tailspin', 'Litware', 'Proseware', 'Wingtip', 'Coho', 'Lamna',
  'Lucerne', 'Woodgrove', 'Relecloud', 'Bellows', 'Southridge', 'Kestrel', 'Osprey', 'Alderbrook', 'Brightwell',
  'Cinderfell', 'Dunmore', 'Elmstead', 'Fernhollow', 'Glenvar', 'Harrowgate', 'Ironbark', 'Juniper & Co', 'Kilnworth',
  'Larchmont', 'Mossgiel', 'Nettlebed', 'Oakhurst', 'Pinecrest', 'Quillon', 'Rookwood', 'Saltmarsh', 'Thistledown',
  'Umberleigh', 'Vantor', 'Willowmere', 'Yarrowby', 'Zephyrine', 'Ardent', 'Bramblecote', 'Copperline',
  'Driftwood Supply', 'Emberly', 'Foxglove', 'Granitehill', 'Hearthstone', 'Isleworth', 'Jasperfield', 'Knotwork',
  'Lumen', 'Marlowe', 'Northcape', 'Ottoline', 'Penrose', 'Quarry Lane', 'Redfern', 'Stillwater']

const ADJECTIVES = ['Classic', 'Compact', 'Deluxe', 'Everyday', 'Vintage', 'Smart', 'Rustic', 'Nordic', 'Urban',
  'Essential', 'Signature', 'Heritage', 'Studio', 'Travel', 'Professional', 'Lightweight', 'Heavy-Duty', 'Artisan',
  'Select', 'Original', 'Limited', 'Midnight', 'Golden', 'Coastal', 'Alpine', 'Foldable', 'Insulated', 'Ergonomic',
  'Modular', 'Minimalist', 'Rugged', 'Slim', 'Oversized', 'Handcrafted', 'Weatherproof', 'Portable', 'Stackable',
  'Adjustable', 'Reversible', 'Quilted', 'Brushed', 'Polished', 'Hammered', 'Matte', 'Glossy', 'Textured', 'Woven',
  'Padded', 'Cordless', 'Rechargeable', 'Magnetic', 'Collapsible', 'Double-Walled', 'Wide-Mouth', 'Low-Profile',
  'Grand', 'Royal', 'Misty', 'Arctic', 'Tropical', 'Harbour']

const MATERIALS = ['Walnut', 'Oak', 'Bamboo', 'Teak', 'Maple', 'Cherry', 'Copper', 'Brass', 'Steel', 'Stainless',
  'Aluminium', 'Cast Iron', 'Ceramic', 'Porcelain', 'Stoneware', 'Terracotta', 'Glass', 'Marble', 'Granite', 'Slate',
  'Linen', 'Cotton', 'Merino', 'Wool', 'Cashmere', 'Leather', 'Suede', 'Canvas', 'Denim', 'Silk', 'Velvet', 'Hemp',
  'Cork', 'Rattan', 'Wicker', 'Jute', 'Felt', 'Acacia', 'Birch', 'Concrete']

const MODELS = ['Pro', 'Plus', 'Max', 'Lite', 'Mini', 'Mk II', 'Mk III', 'No. 5', 'No. 9', 'Edition', 'Reserve', 'One']

type VariantKind = 'apparel' | 'shoes' | 'colour' | 'size'
// Each item carries its SKU code, its category and, for some, the variants it comes in.
interface ItemKind { name: string, code: string, category: number, sizes?: string[], variants?: VariantKind }
const ITEMS: ItemKind[] = [
  { name: 'Espresso Beans', code: 'ESP', category: 0, sizes: ['250 g', '500 g', '1 kg'] },
  { name: 'Filter Coffee', code: 'FLT', category: 0, sizes: ['250 g', '1 kg'] },
  { name: 'Cold Brew Concentrate', code: 'CBC', category: 0, sizes: ['500 ml', '1 l'] },
  { name: 'Green Tea', code: 'GTE', category: 1, sizes: ['20 bags', '50 g', '100 g'] },
  { name: 'Black Tea', code: 'BTE', category: 1, sizes: ['20 bags', '100 g'] },
  { name: 'Herbal Infusion', code: 'HRB', category: 1 },
  { name: 'Coffee Mug', code: 'MUG', category: 2, sizes: ['250 ml', '350 ml'], variants: 'colour' },
  { name: 'Travel Tumbler', code: 'TMB', category: 2, sizes: ['350 ml', '500 ml'], variants: 'colour' },
  { name: 'Water Bottle', code: 'BTL', category: 2, sizes: ['500 ml', '750 ml'], variants: 'colour' },
  { name: 'Teapot', code: 'TPT', category: 2, variants: 'size' },
  { name: 'French Press', code: 'FRP', category: 3, sizes: ['0.35 l', '1 l'] },
  { name: 'Pour-Over Dripper', code: 'DRP', category: 3, variants: 'colour' },
  { name: 'Burr Grinder', code: 'GRD', category: 3 },
  { name: 'Electric Kettle', code: 'KTL', category: 4, sizes: ['1 l', '1.7 l'], variants: 'colour' },
  { name: 'Milk Frother', code: 'FRO', category: 4 },
  { name: 'Espresso Machine', code: 'EMC', category: 4, variants: 'colour' },
  { name: 'Toaster', code: 'TST', category: 4, variants: 'colour' },
  { name: 'T-Shirt', code: 'TEE', category: 5, variants: 'apparel' },
  { name: 'Hoodie', code: 'HOD', category: 5, variants: 'apparel' },
  { name: 'Rain Jacket', code: 'JKT', category: 5, variants: 'apparel' },
  { name: 'Apron', code: 'APR', category: 5, variants: 'colour' },
  { name: 'Beanie', code: 'BNE', category: 5, variants: 'colour' },
  { name: 'Sneakers', code: 'SNK', category: 6, variants: 'shoes' },
  { name: 'Hiking Boots', code: 'BOT', category: 6, variants: 'shoes' },
  { name: 'Slippers', code: 'SLP', category: 6, variants: 'shoes' },
  { name: 'Notebook', code: 'NTB', category: 7, sizes: ['A5', 'A6'], variants: 'colour' },
  { name: 'Fountain Pen', code: 'PEN', category: 7, variants: 'colour' },
  { name: 'Desk Organiser', code: 'ORG', category: 7 },
  { name: 'Scented Candle', code: 'CND', category: 8, sizes: ['180 g', '320 g'], variants: 'size' },
  { name: 'Picture Frame', code: 'FRM', category: 8, variants: 'size' },
  { name: 'Wall Clock', code: 'CLK', category: 8 },
  { name: 'Throw Blanket', code: 'BLK', category: 9, variants: 'colour' },
  { name: 'Pillowcase Set', code: 'PLW', category: 9, variants: 'colour' },
  { name: 'Duvet Cover', code: 'DUV', category: 9, variants: 'size' },
  { name: 'Bath Towel', code: 'TWL', category: 10, variants: 'colour' },
  { name: 'Soap Dish', code: 'SOP', category: 10 },
  { name: 'Cutting Board', code: 'CUT', category: 11, variants: 'size' },
  { name: 'Chef Knife', code: 'KNF', category: 11, variants: 'size' },
  { name: 'Salad Bowl', code: 'BWL', category: 11, sizes: ['20 cm', '28 cm'] },
  { name: 'Cast Iron Skillet', code: 'SKL', category: 12, variants: 'size' },
  { name: 'Dutch Oven', code: 'DOV', category: 12, variants: 'colour' },
  { name: 'Saucepan', code: 'SPN', category: 12, sizes: ['1.5 l', '2.5 l'] },
  { name: 'Olive Oil', code: 'OIL', category: 13, sizes: ['500 ml', '1 l'] },
  { name: 'Dark Chocolate', code: 'CHO', category: 13, sizes: ['100 g', '200 g'] },
  { name: 'Granola', code: 'GRN', category: 13, sizes: ['400 g', '750 g'] },
  { name: 'Honey Jar', code: 'HNY', category: 13, sizes: ['250 g', '500 g'] },
  { name: 'Camping Chair', code: 'CHR', category: 14, variants: 'colour' },
  { name: 'Yoga Mat', code: 'YGM', category: 14, variants: 'colour' },
  { name: 'Picnic Blanket', code: 'PIC', category: 14 },
  { name: 'Plant Pot', code: 'POT', category: 15, sizes: ['12 cm', '18 cm', '24 cm'] },
  { name: 'Watering Can', code: 'WCN', category: 15, variants: 'colour' },
  { name: 'Pruning Shears', code: 'PRN', category: 15 },
  { name: 'Bluetooth Speaker', code: 'SPK', category: 16, variants: 'colour' },
  { name: 'Wireless Charger', code: 'CHG', category: 16 },
  { name: 'Headphones', code: 'HPH', category: 16, variants: 'colour' },
  { name: 'Desk Lamp', code: 'LMP', category: 17, variants: 'colour' },
  { name: 'Pendant Light', code: 'PND', category: 17, variants: 'size' },
  { name: 'Dog Bed', code: 'DOG', category: 18, variants: 'size' },
  { name: 'Cat Scratcher', code: 'CAT', category: 18 },
  { name: 'Building Blocks', code: 'BLD', category: 19, sizes: ['100 pieces', '250 pieces'] },
  { name: 'Wooden Puzzle', code: 'PUZ', category: 19 }
]

const CATEGORY_NAMES = ['Coffee', 'Tea', 'Drinkware', 'Brewing', 'Appliances', 'Apparel', 'Footwear', 'Stationery',
  'Home Decor', 'Bedding', 'Bath', 'Kitchen', 'Cookware', 'Pantry', 'Outdoor', 'Garden', 'Electronics', 'Lighting',
  'Pets', 'Toys']
const COLOURS = ['Black', 'White', 'Red', 'Navy', 'Forest Green', 'Sand', 'Charcoal', 'Mustard', 'Sky Blue', 'Terracotta']
const SIZES = ['XS', 'S', 'M', 'L', 'XL', 'XXL']
const SHOE_SIZES = ['36', '37', '38', '39', '40', '41', '42', '43', '44', '45', '46']
const DIMENSIONS = ['Small', 'Medium', 'Large', 'Extra Large']

export interface BenchCatalog {
  catalog: CatalogFile
  /** Product ids, in generation order. */
  productIds: string[]
}

// Share of item kinds that come in variants: scales the per-product chance so that
// `withVariants` of all products get them.
const VARIANT_KINDS = ITEMS.filter((i) => i.variants).length / ITEMS.length

export interface CatalogOptions {
  products: number
  seed: number
  /** Share of products with variants and combinations. */
  withVariants?: number
}

export function generateCatalog ({ products: count, seed, withVariants = 0.2 }: CatalogOptions): BenchCatalog {
  const random = randomGenerator(seed)
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1))
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
  const chance = (p: number) => random() < p
  const hex = '0123456789abcdef'
  const uuid = () => {
    let s = ''
    for (let i = 0; i < 32; i++) s += i === 12 ? '4' : i === 16 ? '89ab'[Math.floor(random() * 4)]! : hex[Math.floor(random() * 16)]!
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
  for (let i = 0; i < count; i++) {
    const item = pick(ITEMS)
    const brand = pick(brands)
    const material = chance(0.75) ? ` ${pick(MATERIALS)}` : ''
    const model = chance(0.25) ? ` ${pick(MODELS)}` : ''
    const size = item.sizes && chance(0.7) ? ` ${pick(item.sizes)}` : ''
    const name = `${brand.name} ${pick(ADJECTIVES)}${material} ${item.name}${model}${size}`
    const sku = `${item.code}-${brand.name.replace(/\W/g, '').slice(0, 3).toUpperCase()}-${String(i + 1).padStart(6, '0')}`
    const price = cents(item.category === 4 ? 29 : 1.5, item.category === 4 ? 899 : 149)
    const category = categories[item.category]!.id
    const second = chance(0.2) ? pick(categories).id : category
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
      categoryIds: second === category ? [category] : [category, second],
      brandId: brand.id
    }
    if (item.variants && chance(withVariants / VARIANT_KINDS)) addVariants(product, item.variants)
    list.push(product)
  }
  return { catalog: { categories, brands, products: list }, productIds: list.map((p) => p.id) }

  function addVariants (product: CatalogProduct, kind: VariantKind) {
    const dimensions: Array<{ name: string, values: string[] }> = []
    if (kind === 'apparel') {
      dimensions.push({ name: 'Colour', values: pickSome(COLOURS, int(2, 4)) }, { name: 'Size', values: SIZES.slice(int(0, 1), int(4, 6)) })
    } else if (kind === 'shoes') {
      const from = int(0, 4)
      dimensions.push({ name: 'Colour', values: pickSome(COLOURS, int(1, 3)) }, { name: 'Size', values: SHOE_SIZES.slice(from, from + int(4, 7)) })
    } else if (kind === 'colour') {
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

/** What `query` is matched against: the lower-cased name, SKUs and barcodes (db/catalog.ts searchText). */
export function searchText (p: CatalogProduct): string {
  return [p.name, p.sku, p.barcode, ...(p.combinations ?? []).flatMap((c) => [c.sku, c.barcode])]
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .map((s) => s.toLowerCase())
    .join('\n')
}

/** Whether it can be ordered now (db/catalog.ts orderable): what `isAvailable` answers and filters on. */
export function orderable (p: CatalogProduct): boolean {
  const inStock = (item: { quantity?: number | null, isAvailable: boolean }) => item.isAvailable && (item.quantity == null || item.quantity > 0)
  return p.isAvailable && (p.combinations?.length ? p.combinations.some(inStock) : inStock(p))
}

/** How many products each term matches (case-insensitive substring, as the API searches). */
export function countMatches (catalog: CatalogFile, terms: string[]): number[] {
  const texts = (catalog.products ?? []).map(searchText)
  return terms.map((term) => {
    const needle = term.toLowerCase()
    return texts.reduce((n, text) => n + (text.includes(needle) ? 1 : 0), 0)
  })
}

/**
 * Search terms as an integrator types them: a 3–6 letter piece of a word of a random
 * product's name ("alnu" of Walnut, "Ergon", "ket"), so the terms are many and each
 * finds anything from a few products to tens of thousands.
 */
export function namePieces (names: readonly string[], seed: number): () => string {
  const random = randomGenerator(seed + 23)
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1))
  const words = (name: string) => name.split(/[^A-Za-z]+/).filter((w) => w.length >= 3)
  return () => {
    for (;;) {
      const candidates = words(names[int(0, names.length - 1)]!)
      if (candidates.length === 0) continue
      const word = candidates[int(0, candidates.length - 1)]!
      const length = int(3, Math.min(6, word.length))
      const start = int(0, word.length - length)
      return word.slice(start, start + length)
    }
  }
}
