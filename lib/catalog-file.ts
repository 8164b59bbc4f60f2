// Checks a catalogue file against the import format and its own consistency, naming the
// JSON path of every problem (`products[3].price: must be a number`).
import { CatalogFile } from '../schemas/catalog-file.ts'
import { isAmount } from './money.ts'
import { bodyAjv, unstorableStrings, validationDetails } from './validation.ts'

const MAX_PROBLEMS = 20

/** A catalogue file that cannot be imported; `problems` are `path: what is wrong` lines. */
export class CatalogError extends Error {
  readonly problems: string[]

  constructor (problems: string[]) {
    const shown = problems.slice(0, MAX_PROBLEMS)
    const more = problems.length - shown.length
    super(`the catalogue file is invalid:\n  ${shown.join('\n  ')}${more > 0 ? `\n  … and ${more} more` : ''}`)
    this.name = 'CatalogError'
    this.problems = problems
  }
}

const validateShape = bodyAjv.compile<CatalogFile>(CatalogFile)

type CatalogDiscount = NonNullable<NonNullable<CatalogFile['products']>[number]['discount']>

/** The file's content when it is a valid catalogue; otherwise a CatalogError listing the problems. */
export function checkCatalog (data: unknown): CatalogFile {
  if (!validateShape(data)) throw new CatalogError(validationDetails(validateShape.errors!).map((d) => `${d.path}: ${d.message}`))
  const problems: string[] = []
  for (const [path, problem] of unstorableStrings(data)) problems.push(`${path}: ${problem}`)

  // Ids are compared case-insensitively, as PostgreSQL's uuid type does.
  const seen = new Map<string, string>()
  const unique = (id: string, path: string) => {
    const key = id.toLowerCase()
    const first = seen.get(key)
    if (first !== undefined) problems.push(`${path}: id ${id} is already used at ${first}`)
    else seen.set(key, path)
  }
  const named = (name: string, path: string) => {
    if (name.trim() === '') problems.push(`${path}: must not be blank`)
  }
  const amount = (value: number, path: string) => {
    if (!isAmount(value)) problems.push(`${path}: must have at most two decimals`)
  }
  const discount = (d: CatalogDiscount, path: string) => {
    amount(d.value, `${path}.value`)
    if (d.type === 'percentage' && d.value > 100) problems.push(`${path}.value: a percentage must be at most 100`)
    if (d.startsAt && d.endsAt && new Date(d.startsAt) >= new Date(d.endsAt)) problems.push(`${path}.endsAt: must be after startsAt`)
  }

  data.categories?.forEach((c, i) => {
    unique(c.id, `categories[${i}].id`)
    named(c.name, `categories[${i}].name`)
  })
  data.brands?.forEach((b, i) => {
    unique(b.id, `brands[${i}].id`)
    named(b.name, `brands[${i}].name`)
  })
  data.products?.forEach((p, i) => {
    const at = `products[${i}]`
    unique(p.id, `${at}.id`)
    named(p.name, `${at}.name`)
    amount(p.price, `${at}.price`)
    if (p.discount) discount(p.discount, `${at}.discount`)
    const categoryIds = new Set<string>()
    p.categoryIds?.forEach((id, ci) => {
      if (categoryIds.has(id.toLowerCase())) problems.push(`${at}.categoryIds[${ci}]: category ${id} is listed twice`)
      categoryIds.add(id.toLowerCase())
    })

    const optionVariant = new Map<string, number>()
    p.variants?.forEach((v, vi) => {
      unique(v.id, `${at}.variants[${vi}].id`)
      named(v.name, `${at}.variants[${vi}].name`)
      v.options.forEach((o, oi) => {
        unique(o.id, `${at}.variants[${vi}].options[${oi}].id`)
        named(o.name, `${at}.variants[${vi}].options[${oi}].name`)
        optionVariant.set(o.id.toLowerCase(), vi)
      })
    })
    const variantCount = p.variants?.length ?? 0
    if ((p.combinations?.length ?? 0) > 0 && variantCount === 0) {
      problems.push(`${at}.combinations: a product with combinations must have variants`)
      return
    }
    const signatures = new Map<string, number>()
    p.combinations?.forEach((c, ci) => {
      const cat = `${at}.combinations[${ci}]`
      unique(c.id, `${cat}.id`)
      amount(c.price, `${cat}.price`)
      if (c.discount) discount(c.discount, `${cat}.discount`)
      const variantsCovered = c.optionIds.map((o) => optionVariant.get(o.toLowerCase()))
      const stranger = variantsCovered.findIndex((v) => v === undefined)
      if (stranger !== -1) {
        problems.push(`${cat}.optionIds[${stranger}]: option ${c.optionIds[stranger]!} is not an option of this product's variants`)
      } else if (new Set(variantsCovered).size !== c.optionIds.length || c.optionIds.length !== variantCount) {
        problems.push(`${cat}.optionIds: must hold exactly one option of each of the product's ${variantCount} variants`)
      } else {
        const signature = c.optionIds.map((o) => o.toLowerCase()).sort().join(',')
        const first = signatures.get(signature)
        if (first !== undefined) problems.push(`${cat}.optionIds: the same options as ${at}.combinations[${first}]`)
        else signatures.set(signature, ci)
      }
    })
  })
  if (problems.length > 0) throw new CatalogError(problems)
  return data
}
