// What integrators see of the catalogue.
import { Type, type Static } from 'typebox'
import { Count, CursorQuery, LIMITS, ListQuery, UpdatedSinceQuery, Money, Nullable, Page, PageQuery, Text, Timestamp, Uuid, ref } from './common.ts'

export const VariantOption = Type.Object({
  id: Uuid,
  name: Text(LIMITS.optionName, { examples: ['Black'] })
}, { $id: 'VariantOption', title: 'VariantOption', additionalProperties: false })

export const Variant = Type.Object({
  id: Uuid,
  name: Text(LIMITS.optionName, { examples: ['Color'] }),
  options: Type.Array(ref(VariantOption), { maxItems: LIMITS.options })
}, { $id: 'Variant', title: 'Variant', description: 'An option dimension of a product, such as Color or Size', additionalProperties: false })

export const Combination = Type.Object({
  id: Uuid,
  optionIds: Type.Array(Uuid, { maxItems: LIMITS.variants, description: 'One option of each variant, in the order of the product\'s variants' }),
  sku: Nullable(Text(LIMITS.code)),
  barcode: Nullable(Text(LIMITS.code)),
  quantity: Nullable(Type.Integer({ format: 'int32', minimum: 0, maximum: 2147483647, description: 'Stock; null when not tracked' })),
  price: Money,
  sellPrice: { ...Money, description: 'Price after the active discount (the combination\'s own, else the product\'s)' },
  isAvailable: Type.Boolean({ description: 'Whether it can be ordered now: it and its product marked available, and stock left when tracked' }),
  imageUrl: Nullable(Text(LIMITS.url))
}, { $id: 'Combination', title: 'Combination', description: 'A purchasable combination of variant options; send its id as an order item\'s combinationId', additionalProperties: false })

export const Product = Type.Object({
  id: Uuid,
  name: Text(LIMITS.name, { examples: ['Barista T-shirt'] }),
  sku: Nullable(Text(LIMITS.code)),
  barcode: Nullable(Text(LIMITS.code)),
  quantity: Nullable(Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Stock; null when not tracked. With combinations: the sum of theirs (null when any is untracked)' })),
  price: Money,
  sellPrice: { ...Money, description: 'Price after the active discount, rounded half-up to cents' },
  isAvailable: Type.Boolean({ description: 'Whether it can be ordered now: false when marked unavailable or when its tracked stock is 0; a product with combinations is available when one of them is' }),
  productImageUrl: Nullable(Text(LIMITS.url)),
  categoryIds: Type.Array(Uuid, { maxItems: LIMITS.categories, description: 'The categories it is in, sorted' }),
  brandId: Nullable(Uuid),
  variants: Type.Array(ref(Variant), { maxItems: LIMITS.variants }),
  combinations: Type.Array(ref(Combination), { maxItems: LIMITS.combinations }),
  updatedAt: Timestamp('When anything integrators see of it last changed: an import that changed it, stock taken by an order, a discount window opening or closing (within 60 s)')
}, { $id: 'Product', title: 'Product', additionalProperties: false })
export type Product = Static<typeof Product>

export const ProductPage = Page(ref(Product), 'ProductPage', 'A page of products, sorted by name (case-insensitive), then id')
export type ProductPage = Static<typeof ProductPage>

export const ListProductsQuery = Type.Object({
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name, SKU or barcode of the product or of any of its combinations', maxLength: 200 })),
  page: Type.Optional(PageQuery),
  isAvailable: Type.Optional(Type.Unsafe<'true' | 'false'>({ type: 'string', enum: ['true', 'false'], description: 'Filter by availability: `true` or `false`' })),
  categoryIds: Type.Optional(ListQuery('categoryIds', 4000, 'Category GUIDs; a product in any of them matches; invalid GUIDs are ignored')),
  brandIds: Type.Optional(ListQuery('brandIds', 4000, 'Brand GUIDs; a product of any of them matches; invalid GUIDs are ignored')),
  barcode: Type.Optional(Type.String({ maxLength: 200, description: 'Exact barcode of the product or of any of its combinations' })),
  sku: Type.Optional(Type.String({ maxLength: 200, description: 'Exact SKU of the product or of any of its combinations' })),
  updatedSince: Type.Optional(UpdatedSinceQuery),
  cursor: Type.Optional(CursorQuery)
}, { additionalProperties: true })
export type ListProductsQuery = Static<typeof ListProductsQuery>

export const ProductParams = Type.Object({
  id: Type.String({ maxLength: 200, description: 'Product GUID' })
})

const grouping = (id: string, description: string) => Type.Object({
  id: Uuid,
  name: Text(LIMITS.groupName, { examples: [id === 'Category' ? 'Coffee' : 'Northwind'] }),
  productCount: Count('How many products it holds')
}, { $id: id, title: id, description, additionalProperties: false })

export const Category = grouping('Category', 'A category: send its id in the categoryIds filter of list products')
export const Brand = grouping('Brand', 'A brand: send its id in the brandIds filter of list products')
export const CategoryPage = Page(ref(Category), 'CategoryPage', 'A page of categories, sorted by name (case-insensitive), then id')
export type CategoryPage = Static<typeof CategoryPage>
export const BrandPage = Page(ref(Brand), 'BrandPage', 'A page of brands, sorted by name (case-insensitive), then id')
export type BrandPage = Static<typeof BrandPage>

export const ListGroupingsQuery = Type.Object({ page: Type.Optional(PageQuery), cursor: Type.Optional(CursorQuery) })

export const productSchemas = [VariantOption, Variant, Combination, Product, ProductPage, Category, Brand, CategoryPage, BrandPage]
