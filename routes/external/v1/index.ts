// The integrators' API: every route below requires an API key and its route's scope.
import type { FastifyPluginAsync } from 'fastify'
import authPlugin from '../../../plugins/auth.ts'
import conditionalReads from '../../../plugins/conditional-reads.ts'
import rateLimit from '../../../plugins/rate-limit.ts'
import changes from './changes.ts'
import exportRoutes from './export.ts'
import groupings from './groupings.ts'
import orders from './orders.ts'
import products from './products.ts'
import reservations from './reservations.ts'
import webhooks from './webhooks.ts'

const externalV1: FastifyPluginAsync = async (app) => {
  await app.register(rateLimit)
  await app.register(authPlugin)
  await app.register(conditionalReads)
  await app.register(products)
  await app.register(groupings)
  await app.register(orders)
  await app.register(reservations)
  await app.register(changes)
  await app.register(exportRoutes)
  await app.register(webhooks)
}

export default externalV1
