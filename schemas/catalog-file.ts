// The catalogue import file: what `storefront catalog import` accepts.
import { Type, type Static } from 'typebox'
import { LIMITS, Nullable } from './common.ts'

const Id = Type.String({ format: 'uuid' })
const Amount = Type.Number({ minimum: 0, maximum: 9999999999.99 })
const Stock = Nullable(Type.Integer({ minimum: 0, maximum: 2147483647 }))
const Timestamp = Nullable(Type.String({ format: 'date-time' }))

const Discount = Type.Object({
  type: Type.Unsafe<'percentage' | 'amount'>({ type: 'string', enum: ['percentage', 'amount'] }),
  value: Amount,
  startsAt: Type.Optional(Timestamp),
  endsAt: Type.Optional(Timestamp)
})

const Named = (maxLength: number) => Type.Object({ id: Id, name: Type.String({ minLength: 1, maxLength }) })

/** A category or a brand. */
export const CatalogGroup = Named(LIMITS.groupName)
export type CatalogGroup = Static<typeof CatalogGroup>

const Combination = Type.Object({
  id: Id,
  optionIds: Type.Array(Id, { maxItems: LIMITS.variants }),
  sku: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.code }))),
  barcode: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.code }))),
  quantity: Type.Optional(Stock),
  price: Amount,
  discount: Type.Optional(Nullable(Discount)),
  isAvailable: Type.Boolean(),
  imageUrl: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.url })))
})

/** One product of the file, with its variants and combinations. */
export const CatalogProduct = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1, maxLength: LIMITS.name }),
  sku: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.code }))),
  barcode: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.code }))),
  quantity: Type.Optional(Stock),
  price: Amount,
  discount: Type.Optional(Nullable(Discount)),
  isAvailable: Type.Boolean(),
  imageUrl: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.url }))),
  categoryIds: Type.Optional(Type.Array(Id, { maxItems: LIMITS.categories })),
  brandId: Type.Optional(Nullable(Id)),
  variants: Type.Optional(Type.Array(Type.Object({
    id: Id,
    name: Type.String({ minLength: 1, maxLength: LIMITS.optionName }),
    options: Type.Array(Named(LIMITS.optionName), { minItems: 1, maxItems: LIMITS.options })
  }), { maxItems: LIMITS.variants })),
  combinations: Type.Optional(Type.Array(Combination, { maxItems: LIMITS.combinations }))
})

export type CatalogProduct = Static<typeof CatalogProduct>

export const CatalogFile = Type.Object({
  categories: Type.Optional(Type.Array(CatalogGroup)),
  brands: Type.Optional(Type.Array(CatalogGroup)),
  products: Type.Optional(Type.Array(CatalogProduct))
})
export type CatalogFile = Static<typeof CatalogFile>

/** The parts of a file that hold lists, each read one item at a time. */
export const CATALOG_SECTIONS = ['categories', 'brands', 'products'] as const
export type CatalogSection = typeof CATALOG_SECTIONS[number]
