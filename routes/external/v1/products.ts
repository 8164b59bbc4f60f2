// GET /products and GET /products/{id}: the catalogue, read through the instance's cache.
// The answers are stored JSON text, sent as they are (Fastify skips the response schema's
// serializer for a string with a JSON content type) with their stored entity tag.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { apiError } from '../../../errors.ts'
import { PAGE_SIZE, conditionalResponses, documentedResponse, isUuid, pageWindow, ref } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { ListProductsQuery, Product, ProductPage, ProductParams } from '../../../schemas/products.ts'
import { getProduct, listProductPage, productFilters, type CatalogRead, type ProductFilters } from '../../../services/catalog.ts'
import { openListCursor, pick } from '../../../services/list-cursor.ts'
import { v1Errors, v1Headers } from './shared.ts'

// The list's own parameters: none may come with a cursor (unknown ones are ignored, as always).
const LIST_PRODUCTS_PARAMETERS = ['query', 'isAvailable', 'categoryIds', 'brandIds', 'barcode', 'sku', 'updatedSince'] as const

function sendRead (reply: FastifyReply, read: CatalogRead): string {
  reply.header('etag', read.etag).type('application/json; charset=utf-8')
  return read.body
}

const products: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/products', {
    config: { scope: 'products:list', conditional: true },
    schema: {
      operationId: 'listProducts',
      summary: 'List products',
      description: `Products sorted by name (case-insensitive), then id; ${PAGE_SIZE} a page. A page past the end answers 200 with no items and the real total.`,
      tags: ['Products'],
      querystring: ListProductsQuery,
      response: {
        ...conditionalResponses(documentedResponse('A page of products; past the last page, no items and the real total', ref(ProductPage), RESPONSE_EXAMPLES.listProducts, v1Headers(200)), v1Headers(200)),
        ...v1Errors()
      }
    }
  }, async (request, reply) => {
    const { cursor, page, ...query } = request.query
    if (cursor === undefined) return sendRead(reply, await listProductPage(app.catalogReads, app.cursorSecret, productFilters(query), pageWindow(page)))
    const resumed = openListCursor<ProductFilters>(app.cursorSecret, 'products', cursor, { page, ...pick(query, LIST_PRODUCTS_PARAMETERS) })
    return sendRead(reply, await listProductPage(app.catalogReads, app.cursorSecret, resumed.filters, resumed.window))
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
        ...conditionalResponses(documentedResponse('The product, with its variants and purchasable combinations', ref(Product), RESPONSE_EXAMPLES.getProduct, v1Headers(200)), v1Headers(200)),
        ...v1Errors('invalid_product_id', 'product_not_found', {
          code: 'validation_failed',
          message: 'path: a segment is too long',
          details: [{ path: 'path', message: 'a segment is too long' }]
        })
      }
    }
  }, async (request, reply) => {
    if (!isUuid(request.params.id)) throw apiError('invalid_product_id')
    const product = await getProduct(app.catalogReads, request.params.id)
    if (product === null) throw apiError('product_not_found')
    return sendRead(reply, product)
  })
}

export default products
