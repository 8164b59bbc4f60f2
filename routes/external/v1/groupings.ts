// GET /categories and GET /brands: the ids the product filters take, with product counts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PAGE_SIZE, conditionalResponses, documentedResponse, pageWindow, ref } from '../../../schemas/common.ts'
import { RESPONSE_EXAMPLES } from '../../../schemas/examples.ts'
import { BrandPage, CategoryPage, ListGroupingsQuery } from '../../../schemas/products.ts'
import { listGroupingPage } from '../../../services/catalog.ts'
import { openListCursor } from '../../../services/list-cursor.ts'
import { v1Errors, v1Headers } from './shared.ts'

const ROUTES = [
  { grouping: 'categories', operationId: 'listCategories', summary: 'List categories', filter: 'categoryIds', page: CategoryPage },
  { grouping: 'brands', operationId: 'listBrands', summary: 'List brands', filter: 'brandIds', page: BrandPage }
] as const

const groupings: FastifyPluginAsyncTypebox = async (app) => {
  for (const route of ROUTES) {
    app.get(`/${route.grouping}`, {
      config: { scope: 'products:list', conditional: true },
      schema: {
        operationId: route.operationId,
        summary: route.summary,
        description: `Every one of the store's ${route.grouping}, sorted by name (case-insensitive), then id; ${PAGE_SIZE} a page. Filter products by them with ${route.filter}.`,
        tags: ['Products'],
        querystring: ListGroupingsQuery,
        response: {
          ...conditionalResponses(documentedResponse(`A page of ${route.grouping}`, ref(route.page), RESPONSE_EXAMPLES[route.operationId], v1Headers(200)), v1Headers(200)),
          ...v1Errors()
        }
      }
    }, async (request) => {
      const { cursor, page } = request.query
      if (cursor === undefined) return listGroupingPage(app.database, app.catalogCache, app.cursorSecret, route.grouping, pageWindow(page))
      return listGroupingPage(app.database, app.catalogCache, app.cursorSecret, route.grouping, openListCursor(app.cursorSecret, route.grouping, cursor, { page }).window)
    })
  }
}

export default groupings
