// GET /categories and GET /brands: the ids the product filters take, with product counts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { pageWindow, ref } from '../../../schemas/common.ts'
import { BrandPage, CategoryPage, ListGroupingsQuery } from '../../../schemas/products.ts'
import { listGroupingPage } from '../../../services/catalog.ts'
import { v1Errors } from './shared.ts'

const groupings: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/categories', {
    config: { scope: 'products:list' },
    schema: {
      operationId: 'listCategories',
      summary: 'List categories',
      description: 'Every category, sorted by name (case-insensitive), then id; 25 a page. Filter products by them with categoryIds.',
      tags: ['Products'],
      querystring: ListGroupingsQuery,
      response: { 200: ref(CategoryPage), ...v1Errors() }
    }
  }, async (request) => listGroupingPage(app, 'categories', pageWindow(request.query.page)))

  app.get('/brands', {
    config: { scope: 'products:list' },
    schema: {
      operationId: 'listBrands',
      summary: 'List brands',
      description: 'Every brand, sorted by name (case-insensitive), then id; 25 a page. Filter products by them with brandIds.',
      tags: ['Products'],
      querystring: ListGroupingsQuery,
      response: { 200: ref(BrandPage), ...v1Errors() }
    }
  }, async (request) => listGroupingPage(app, 'brands', pageWindow(request.query.page)))
}

export default groupings
