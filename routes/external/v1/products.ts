// GET /products and GET /products/{id}: the catalogue, read through the instance's cache.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { apiError } from '../../../errors.ts'
import { isUuid, pageWindow, ref } from '../../../schemas/common.ts'
import { ListProductsQuery, Product, ProductPage, ProductParams } from '../../../schemas/products.ts'
import { getProduct, listProductPage, productFilters } from '../../../services/catalog.ts'
import { v1Errors } from './shared.ts'

const products: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/products', {
    config: { scope: 'products:list' },
    schema: {
      operationId: 'listProducts',
      summary: 'List products',
      description: 'Products sorted by name (case-insensitive), then id; 25 a page. A page past the end answers 200 with no items and the real total.',
      tags: ['Products'],
      querystring: ListProductsQuery,
      response: { 200: ref(ProductPage), ...v1Errors() }
    }
  }, async (request) => {
    return listProductPage(app, productFilters(request.query), pageWindow(request.query.page))
  })

  app.get('/products/:id', {
    config: { scope: 'products:find' },
    schema: {
      operationId: 'getProduct',
      summary: 'Get a product',
      tags: ['Products'],
      params: ProductParams,
      response: { 200: ref(Product), ...v1Errors('invalid_product_id', 'product_not_found') }
    }
  }, async (request) => {
    if (!isUuid(request.params.id)) throw apiError('invalid_product_id')
    const product = await getProduct(app, request.params.id)
    if (product === null) throw apiError('product_not_found')
    return product
  })
}

export default products
