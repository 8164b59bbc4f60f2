// GET /products and GET /products/{id}: the catalogue, read through the instance's cache.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { findProduct, listProducts, type ProductFilters } from '../../../db/products.ts'
import { apiError } from '../../../errors.ts'
import { PAGE_SIZE, errorResponses, isUuid, pageWindow, ref } from '../../../schemas/common.ts'
import { ListProductsQuery, Product, ProductPage, ProductParams } from '../../../schemas/products.ts'
import { cacheExpiry, commonErrors } from './shared.ts'

function guidList (value: string | undefined): string[] | undefined {
  const ids = value?.split(',').map((s) => s.trim().toLowerCase()).filter(isUuid)
  // No valid GUID at all: the filter is absent, as the contract says.
  return ids !== undefined && ids.length > 0 ? [...new Set(ids)] : undefined
}

const products: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/products', {
    config: { scope: 'products:list' },
    schema: {
      operationId: 'listProducts',
      summary: 'List products',
      description: 'Products sorted by name (case-insensitive), then id; 25 a page. A page past the end answers 200 with no items and the real total.',
      tags: ['Products'],
      querystring: ListProductsQuery,
      response: {
        200: ref(ProductPage),
        ...errorResponses([400, 'Invalid query (validation_failed)']),
        ...commonErrors
      }
    }
  }, async (request) => {
    const q = request.query
    const window = pageWindow(q.page)
    const filters: ProductFilters = {
      query: q.query?.trim() || undefined,
      isAvailable: q.isAvailable === undefined ? undefined : q.isAvailable === 'true',
      categoryIds: guidList(q.categoryIds),
      brandIds: guidList(q.brandIds),
      // Exact matches, so not trimmed; but an empty parameter (`sku=`) is no filter, like `query=`.
      sku: q.sku || undefined,
      barcode: q.barcode || undefined
    }
    const result = await app.storeState.cachedRead(`list:${window.page}:${JSON.stringify(filters)}`, async () => {
      const now = new Date()
      const { items, total } = await listProducts(app.database.db, filters, window, now)
      return {
        value: { items: items.map((i) => i.product), page: window.page, pageSize: PAGE_SIZE, total },
        expiresAt: cacheExpiry(now, items.map((i) => i.priceChangesAt))
      }
    })
    return result!
  })

  app.get('/products/:id', {
    config: { scope: 'products:find' },
    schema: {
      operationId: 'getProduct',
      summary: 'Get a product',
      tags: ['Products'],
      params: ProductParams,
      response: {
        200: ref(Product),
        ...errorResponses([400, 'The id is not a GUID (invalid_product_id)'], [404, 'No product has that id (product_not_found)']),
        ...commonErrors
      }
    }
  }, async (request) => {
    const id = request.params.id
    if (!isUuid(id)) throw apiError('invalid_product_id', 'The product id must be a GUID')
    const product = await app.storeState.cachedRead(`product:${id.toLowerCase()}`, async () => {
      const now = new Date()
      const found = await findProduct(app.database.db, id, now)
      return found && { value: found.product, expiresAt: cacheExpiry(now, [found.priceChangesAt]) }
    })
    if (product === null) throw apiError('product_not_found', 'No product has that id')
    return product
  })
}

export default products
