// GET /products and GET /products/{id}: the catalogue, read through the instance's cache.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { apiError } from '../../../errors.ts'
import { conditionalResponses, documentedResponse, isUuid, pageWindow, ref } from '../../../schemas/common.ts'
import { ListProductsQuery, Product, ProductPage, ProductParams } from '../../../schemas/products.ts'
import { getProduct, listProductPage, productFilters, type ProductFilters } from '../../../services/catalog.ts'
import { openListCursor, pick } from '../../../services/list-cursor.ts'
import { v1Errors, v1Headers } from './shared.ts'

// What the demo catalogue answers to the parameter examples of the document
// (plugins/openapi.ts): test/routes/docs.test.ts holds the two together.
const TUMBLER = {
  id: 'd3e00000-0000-4000-8000-000000000020',
  name: 'Travel Tumbler 470 ml',
  sku: 'ACC-TMB-470',
  barcode: null,
  quantity: 25,
  price: 27.5,
  sellPrice: 27.5,
  isAvailable: true,
  productImageUrl: 'https://cdn.example.com/demo/travel-tumbler-470-ml.jpg',
  categoryIds: ['ca7e6000-0000-4000-8000-000000000005'],
  brandId: 'b7a4d000-0000-4000-8000-000000000003',
  variants: [{
    id: 'd3e0a000-0000-4000-8000-000000000008',
    name: 'Color',
    options: [{ id: 'd3e0b000-0000-4000-8000-000000000016', name: 'Steel' }, { id: 'd3e0b000-0000-4000-8000-000000000017', name: 'Matte Black' }]
  }],
  combinations: [
    { id: 'd3e0c000-0000-4000-8000-00000000001c', optionIds: ['d3e0b000-0000-4000-8000-000000000016'], sku: 'ACC-TMB-470-STE', barcode: '4006381000543', quantity: 16, price: 27.5, sellPrice: 27.5, isAvailable: true, imageUrl: null },
    { id: 'd3e0c000-0000-4000-8000-00000000001d', optionIds: ['d3e0b000-0000-4000-8000-000000000017'], sku: 'ACC-TMB-470-MAT', barcode: '4006381000550', quantity: 9, price: 29.99, sellPrice: 29.99, isAvailable: true, imageUrl: null }
  ],
  updatedAt: '2026-11-23T09:30:00.000Z'
}
const YIRGACHEFFE_PAGE = {
  items: [{
    id: 'd3e00000-0000-4000-8000-000000000001',
    name: 'Ethiopia Yirgacheffe 250 g',
    sku: 'COF-ETH-250',
    barcode: '4006381000017',
    quantity: 40,
    price: 12.5,
    sellPrice: 12.5,
    isAvailable: true,
    productImageUrl: 'https://cdn.example.com/demo/ethiopia-yirgacheffe-250-g.jpg',
    categoryIds: ['ca7e6000-0000-4000-8000-000000000001'],
    brandId: 'b7a4d000-0000-4000-8000-000000000001',
    variants: [],
    combinations: [],
    updatedAt: '2026-11-23T09:30:00.000Z'
  }],
  page: 1,
  pageSize: 25,
  total: 1,
  nextCursor: null
}

// The list's own parameters: none may come with a cursor (unknown ones are ignored, as always).
const LIST_PRODUCTS_PARAMETERS = ['query', 'isAvailable', 'categoryIds', 'brandIds', 'barcode', 'sku', 'updatedSince'] as const

const products: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/products', {
    config: { scope: 'products:list', conditional: true },
    schema: {
      operationId: 'listProducts',
      summary: 'List products',
      description: 'Products sorted by name (case-insensitive), then id; 25 a page. A page past the end answers 200 with no items and the real total.',
      tags: ['Products'],
      querystring: ListProductsQuery,
      response: {
        ...conditionalResponses(documentedResponse('A page of products; past the last page, no items and the real total', ref(ProductPage), {
          yirgacheffe: { summary: 'Every filter at once, as the parameter examples send them', value: YIRGACHEFFE_PAGE }
        }, v1Headers(200)), v1Headers(200)),
        ...v1Errors()
      }
    }
  }, async (request) => {
    const { cursor, page, ...query } = request.query
    if (cursor === undefined) return listProductPage(app.database, app.catalogCache, app.cursorSecret, productFilters(query), pageWindow(page))
    const resumed = openListCursor<ProductFilters>(app.cursorSecret, 'products', cursor, { page, ...pick(query, LIST_PRODUCTS_PARAMETERS) })
    return listProductPage(app.database, app.catalogCache, app.cursorSecret, resumed.filters, resumed.window)
  })

  app.get('/products/:id', {
    config: { scope: 'products:find', conditional: true },
    schema: {
      operationId: 'getProduct',
      summary: 'Get a product',
      description: 'One product by its GUID, with its variants and purchasable combinations; sellPrice is exact at the moment of the request.',
      tags: ['Products'],
      params: ProductParams,
      response: {
        ...conditionalResponses(documentedResponse('The product, with its variants and purchasable combinations', ref(Product), {
          tumbler: { summary: 'A product with combinations', value: TUMBLER }
        }, v1Headers(200)), v1Headers(200)),
        ...v1Errors('invalid_product_id', 'product_not_found', {
          code: 'validation_failed',
          message: 'path: a segment is too long',
          details: [{ path: 'path', message: 'a segment is too long' }]
        })
      }
    }
  }, async (request) => {
    if (!isUuid(request.params.id)) throw apiError('invalid_product_id')
    const product = await getProduct(app.database, app.catalogCache, request.params.id)
    if (product === null) throw apiError('product_not_found')
    return product
  })
}

export default products
