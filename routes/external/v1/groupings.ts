// GET /categories and GET /brands: the ids the product filters take, with product counts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { conditionalResponses, documentedResponse, pageWindow, ref } from '../../../schemas/common.ts'
import { BrandPage, CategoryPage, ListGroupingsQuery } from '../../../schemas/products.ts'
import { listGroupingPage } from '../../../services/catalog.ts'
import { openListCursor } from '../../../services/list-cursor.ts'
import { v1Errors, v1Headers } from './shared.ts'

// What the demo catalogue answers (test/routes/docs.test.ts holds the two together).
const CATEGORIES = {
  items: [
    { id: 'ca7e6000-0000-4000-8000-000000000005', name: 'Accessories', productCount: 8 },
    { id: 'ca7e6000-0000-4000-8000-000000000004', name: 'Apparel', productCount: 5 },
    { id: 'ca7e6000-0000-4000-8000-000000000003', name: 'Brewing equipment', productCount: 9 },
    { id: 'ca7e6000-0000-4000-8000-000000000001', name: 'Coffee', productCount: 11 },
    { id: 'ca7e6000-0000-4000-8000-000000000002', name: 'Tea', productCount: 9 }
  ],
  page: 1,
  pageSize: 25,
  total: 5,
  nextCursor: null
}
const BRANDS = {
  items: [
    { id: 'b7a4d000-0000-4000-8000-000000000003', name: 'Brewline', productCount: 12 },
    { id: 'b7a4d000-0000-4000-8000-000000000002', name: 'Kettle & Leaf', productCount: 8 },
    { id: 'b7a4d000-0000-4000-8000-000000000001', name: 'Northwind Roasters', productCount: 15 }
  ],
  page: 1,
  pageSize: 25,
  total: 3,
  nextCursor: null
}

const ROUTES = [
  { grouping: 'categories', operationId: 'listCategories', summary: 'List categories', filter: 'categoryIds', page: CategoryPage, example: CATEGORIES },
  { grouping: 'brands', operationId: 'listBrands', summary: 'List brands', filter: 'brandIds', page: BrandPage, example: BRANDS }
] as const

const groupings: FastifyPluginAsyncTypebox = async (app) => {
  for (const route of ROUTES) {
    app.get(`/${route.grouping}`, {
      config: { scope: 'products:list', conditional: true },
      schema: {
        operationId: route.operationId,
        summary: route.summary,
        description: `Every one of the store's ${route.grouping}, sorted by name (case-insensitive), then id; 25 a page. Filter products by them with ${route.filter}.`,
        tags: ['Products'],
        querystring: ListGroupingsQuery,
        response: {
          ...conditionalResponses(documentedResponse(`A page of ${route.grouping}`, ref(route.page), { demo: { summary: `The demo store's ${route.grouping}`, value: route.example } }, v1Headers(200)), v1Headers(200)),
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
