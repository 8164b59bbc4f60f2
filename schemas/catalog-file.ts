// The catalogue import file: what `storefront catalog import` accepts.
import { Type, type Static, type TSchema } from 'typebox'

// `type: [T, 'null']` rather than anyOf, so a wrong value reads "must be a string or null".
function orNull<T extends TSchema> (schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as unknown as { type: string }).type, 'null'] })
}

const Id = Type.String({ format: 'uuid' })
const Amount = Type.Number({ minimum: 0, maximum: 9999999999.99 })
const Stock = orNull(Type.Integer({ minimum: 0, maximum: 2147483647 }))
const Timestamp = orNull(Type.String({ format: 'date-time' }))

const Discount = Type.Object({
  type: Type.Unsafe<'percentage' | 'amount'>({ type: 'string', enum: ['percentage', 'amount'] }),
  value: Amount,
  startsAt: Type.Optional(Timestamp),
  endsAt: Type.Optional(Timestamp)
})

const Named = Type.Object({ id: Id, name: Type.String({ minLength: 1 }) })

const Combination = Type.Object({
  id: Id,
  optionIds: Type.Array(Id),
  sku: Type.Optional(orNull(Type.String())),
  barcode: Type.Optional(orNull(Type.String())),
  quantity: Type.Optional(Stock),
  price: Amount,
  discount: Type.Optional(orNull(Discount)),
  isAvailable: Type.Boolean(),
  imageUrl: Type.Optional(orNull(Type.String()))
})

const Product = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1 }),
  sku: Type.Optional(orNull(Type.String())),
  barcode: Type.Optional(orNull(Type.String())),
  quantity: Type.Optional(Stock),
  price: Amount,
  discount: Type.Optional(orNull(Discount)),
  isAvailable: Type.Boolean(),
  imageUrl: Type.Optional(orNull(Type.String())),
  categoryIds: Type.Optional(Type.Array(Id)),
  brandId: Type.Optional(orNull(Id)),
  variants: Type.Optional(Type.Array(Type.Object({ id: Id, name: Type.String({ minLength: 1 }), options: Type.Array(Named, { minItems: 1 }) }))),
  combinations: Type.Optional(Type.Array(Combination))
})

export const CatalogFile = Type.Object({
  categories: Type.Optional(Type.Array(Named)),
  brands: Type.Optional(Type.Array(Named)),
  products: Type.Optional(Type.Array(Product))
})
export type CatalogFile = Static<typeof CatalogFile>
export type CatalogProduct = NonNullable<CatalogFile['products']>[number]
