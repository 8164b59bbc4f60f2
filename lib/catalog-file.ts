// Checks a catalogue file against the import format and its own consistency one item at a
// time, so a file of any length is checked as it is read, naming the JSON path of every
// problem (`products[3].price: must be a number`).
import { CATALOG_SECTIONS, CatalogGroup, CatalogProduct, type CatalogFile, type CatalogSection } from '../schemas/catalog-file.ts'
import { readJsonObject, type JsonStreamEntry, type JsonStreamError } from './json-stream.ts'
import { isAmount } from './money.ts'
import { UuidMap } from './uuid-map.ts'
import { bodyAjv, unstorableStrings, validationDetails } from './validation.ts'

/** Problems a message lists; the rest are counted. */
const MAX_PROBLEMS = 20
/** Problems kept in memory, whatever a file holds. */
const KEPT_PROBLEMS = 10_000

/** A catalogue file that cannot be imported; `problems` are `path: what is wrong` lines. */
export class CatalogError extends Error {
  readonly problems: string[]

  /** `total`: how many problems there were, when only the first ones were kept. */
  constructor (problems: string[], total = problems.length) {
    const shown = problems.slice(0, MAX_PROBLEMS)
    const more = total - shown.length
    super(`the catalogue file is invalid:\n  ${shown.join('\n  ')}${more > 0 ? `\n  … and ${more} more` : ''}`)
    this.name = 'CatalogError'
    this.problems = problems
  }
}

const validateGroup = bodyAjv.compile<CatalogGroup>(CatalogGroup)
const validateProduct = bodyAjv.compile<CatalogProduct>(CatalogProduct)

type CatalogDiscount = NonNullable<CatalogProduct['discount']>

/** An item of the file that passed its checks, with its place in the file. */
export type CheckedItem =
  | { section: 'categories' | 'brands', index: number, item: CatalogGroup }
  | { section: 'products', index: number, item: CatalogProduct }

// Every id of a file is remembered with where it first appeared, packed in one number (kind,
// product index, variant or combination index, option index) rather than as a path string,
// in a UuidMap: a 100,000-product file holds about half a million ids.
const KINDS = ['category', 'brand', 'product', 'variant', 'option', 'combination'] as const
type IdKind = typeof KINDS[number]
// Bounds of the packed indexes: LIMITS allows 2,000 combinations, 10 variants, 100 options.
const SUB = 2048
const OPTION = 128

function pack (kind: IdKind, item: number, sub = 0, option = 0): number {
  return ((item * SUB + sub) * OPTION + option) * KINDS.length + KINDS.indexOf(kind)
}

function unpack (packed: number): { kind: IdKind, path: string } {
  const kind = KINDS[packed % KINDS.length]!
  let rest = Math.floor(packed / KINDS.length)
  const option = rest % OPTION
  rest = Math.floor(rest / OPTION)
  const sub = rest % SUB
  const item = Math.floor(rest / SUB)
  const path = kind === 'category'
    ? `categories[${item}].id`
    : kind === 'brand'
      ? `brands[${item}].id`
      : kind === 'product'
        ? `products[${item}].id`
        : kind === 'variant'
          ? `products[${item}].variants[${sub}].id`
          : kind === 'option' ? `products[${item}].variants[${sub}].options[${option}].id` : `products[${item}].combinations[${sub}].id`
  return { kind, path }
}

// Any UTF-16 surrogate: a lone one cannot be stored, a pair is fine (unstorableStrings tells them apart).
const SURROGATE = /[\uD800-\uDFFF]/

/** Whether any string in a checked item might be one the database cannot store (NUL, a surrogate). */
function hasSuspectString (value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000') || SURROGATE.test(value)
  if (Array.isArray(value)) return value.some(hasSuspectString)
  if (value !== null && typeof value === 'object') {
    for (const key in value) if (hasSuspectString((value as Record<string, unknown>)[key])) return true
  }
  return false
}

const SECTIONS: ReadonlySet<string> = new Set(CATALOG_SECTIONS)
const isSection = (key: string): key is CatalogSection => SECTIONS.has(key)

/**
 * Checks the entries of one file in order (`check`), remembering what the later ones need:
 * every id and where it first appeared, so a duplicate names both places. Problems are
 * collected, not thrown: `ok` says whether there was any, `error()` lists them.
 */
export class CatalogChecker {
  /** Id (compared as PostgreSQL's uuid type does: in any case) → packed first place. */
  private readonly ids = new UuidMap(1 << 16)
  private readonly sections = new Set<CatalogSection>()
  private readonly kept: string[] = []
  private total = 0
  /** Items read from each section, valid or not. */
  readonly counts = { categories: 0, brands: 0, products: 0 }

  get ok (): boolean {
    return this.total === 0
  }

  fail (...problems: string[]): void {
    for (const problem of problems) {
      this.total++
      if (this.kept.length < KEPT_PROBLEMS) this.kept.push(problem)
    }
  }

  error (): CatalogError {
    return new CatalogError(this.kept, this.total)
  }

  /** Records why the bytes could not be read as a catalogue file. */
  unreadable (err: JsonStreamError): void {
    this.fail(err.kind === 'root' ? '(root): must be an object' : `(root): not valid JSON: ${err.message}`)
  }

  /** Whether the file (so far) defines a category, brand or product with this id. */
  defines (kind: 'category' | 'brand' | 'product', id: string): boolean {
    const packed = this.ids.get(id)
    return packed !== undefined && KINDS[packed % KINDS.length] === kind
  }

  /** The item when it is valid; otherwise null, its problems recorded. Unknown fields of the root are ignored. */
  check (entry: JsonStreamEntry): CheckedItem | null {
    const { key, index, value } = entry
    if (!isSection(key)) return null
    if (index === null || index === 0) {
      if (this.sections.has(key)) this.fail(`${key}: appears twice in the file`)
      this.sections.add(key)
    }
    if (index === null) {
      if (value !== undefined) this.fail(`${key}: must be an array`)
      return null
    }
    this.counts[key]++
    if (key === 'products') {
      const item = this.product(value, index)
      return item ? { section: key, index, item } : null
    }
    const item = this.group(key, value, index)
    return item ? { section: key, index, item } : null
  }

  private unique (id: string, packed: number): void {
    const first = this.ids.get(id)
    if (first !== undefined) this.fail(`${unpack(packed).path}: id ${id} is already used at ${unpack(first).path}`)
    else this.ids.set(id, packed)
  }

  private named (name: string, path: string): void {
    if (name.trim() === '') this.fail(`${path}: must not be blank`)
  }

  private amount (value: number, path: string): void {
    if (!isAmount(value)) this.fail(`${path}: must have at most two decimals`)
  }

  private discount (d: CatalogDiscount, path: string): void {
    this.amount(d.value, `${path}.value`)
    if (d.type === 'percentage' && d.value > 100) this.fail(`${path}.value: a percentage must be at most 100`)
    if (d.startsAt && d.endsAt && new Date(d.startsAt) >= new Date(d.endsAt)) this.fail(`${path}.endsAt: must be after startsAt`)
  }

  /** Checks the shape, then strings the database cannot store; false (problems recorded) when either fails. */
  private shaped<T> (validate: typeof validateGroup | typeof validateProduct, value: unknown, at: string): value is T {
    if (!validate(value)) {
      this.fail(...validationDetails(validate.errors!, at).map((d) => `${d.path}: ${d.message}`))
      return false
    }
    // The walk that names each field is for the rare item that has a problem.
    if (!hasSuspectString(value)) return true
    const before = this.total
    for (const [path, problem] of unstorableStrings(value, at)) this.fail(`${path}: ${problem}`)
    return this.total === before
  }

  private group (section: 'categories' | 'brands', value: unknown, i: number): CatalogGroup | null {
    const at = `${section}[${i}]`
    const before = this.total
    if (!this.shaped<CatalogGroup>(validateGroup, value, at)) return null
    this.unique(value.id, pack(section === 'categories' ? 'category' : 'brand', i))
    this.named(value.name, `${at}.name`)
    return this.total === before ? value : null
  }

  private product (value: unknown, i: number): CatalogProduct | null {
    const at = `products[${i}]`
    const before = this.total
    if (!this.shaped<CatalogProduct>(validateProduct, value, at)) return null
    const p = value
    this.unique(p.id, pack('product', i))
    this.named(p.name, `${at}.name`)
    this.amount(p.price, `${at}.price`)
    if (p.discount) this.discount(p.discount, `${at}.discount`)
    const categoryIds = new Set<string>()
    p.categoryIds?.forEach((id, ci) => {
      if (categoryIds.has(id.toLowerCase())) this.fail(`${at}.categoryIds[${ci}]: category ${id} is listed twice`)
      categoryIds.add(id.toLowerCase())
    })

    const optionVariant = new Map<string, number>()
    p.variants?.forEach((v, vi) => {
      this.unique(v.id, pack('variant', i, vi))
      this.named(v.name, `${at}.variants[${vi}].name`)
      v.options.forEach((o, oi) => {
        this.unique(o.id, pack('option', i, vi, oi))
        this.named(o.name, `${at}.variants[${vi}].options[${oi}].name`)
        optionVariant.set(o.id.toLowerCase(), vi)
      })
    })
    const variantCount = p.variants?.length ?? 0
    if ((p.combinations?.length ?? 0) > 0 && variantCount === 0) {
      this.fail(`${at}.combinations: a product with combinations must have variants`)
      return null
    }
    const signatures = new Map<string, number>()
    p.combinations?.forEach((c, ci) => {
      const cat = `${at}.combinations[${ci}]`
      this.unique(c.id, pack('combination', i, ci))
      this.amount(c.price, `${cat}.price`)
      if (c.discount) this.discount(c.discount, `${cat}.discount`)
      const variantsCovered = c.optionIds.map((o) => optionVariant.get(o.toLowerCase()))
      const stranger = variantsCovered.findIndex((v) => v === undefined)
      if (stranger !== -1) {
        this.fail(`${cat}.optionIds[${stranger}]: option ${c.optionIds[stranger]!} is not an option of this product's variants`)
      } else if (new Set(variantsCovered).size !== c.optionIds.length || c.optionIds.length !== variantCount) {
        this.fail(`${cat}.optionIds: must hold exactly one option of each of the product's ${variantCount} variants`)
      } else {
        const signature = c.optionIds.map((o) => o.toLowerCase()).sort().join(',')
        const first = signatures.get(signature)
        if (first !== undefined) this.fail(`${cat}.optionIds: the same options as ${at}.combinations[${first}]`)
        else signatures.set(signature, ci)
      }
    })
    return this.total === before ? p : null
  }
}

/** The entries of a catalogue already in memory, in the order a file would give them. */
export function * catalogEntries (data: unknown): Generator<JsonStreamEntry> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new CatalogError(['(root): must be an object'])
  for (const [key, value] of Object.entries(data)) {
    if (Array.isArray(value) && isSection(key)) {
      for (let index = 0; index < value.length; index++) yield { key, index, value: value[index] }
    } else {
      yield { key, index: null, value }
    }
  }
}

/** The entries of a catalogue file read from a stream of bytes, one list item at a time. */
export function readCatalog (chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<JsonStreamEntry> {
  return readJsonObject(chunks, SECTIONS)
}

/** The file's content when it is a valid catalogue; otherwise a CatalogError listing the problems. */
export function checkCatalog (data: unknown): CatalogFile {
  const checker = new CatalogChecker()
  for (const entry of catalogEntries(data)) checker.check(entry)
  if (!checker.ok) throw checker.error()
  return data as CatalogFile
}
