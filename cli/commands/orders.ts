// storefront orders set-status ORDER STATUS: an operator's status change, transitions enforced;
// storefront orders purge-test: test keys' orders deleted, live ones never.
import type { Command } from 'commander'
import { ORDER_STATUSES, type OrderStatus } from '../../schemas/orders.ts'
import { setOrderStatus } from '../../services/order-status.ts'
import { purgeTestOrders } from '../../services/test-orders.ts'
import { JSON_OPTION, missingArguments, print, UsageError, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'
import { parseInstant } from '../input.ts'

export default function defineOrders (orders: Command, { config }: CommandContext): void {
  const setStatus = orders.command('set-status')
    .description('change the status of an order; only the allowed transitions are made')
    .argument('<ORDER>', 'the order number or id')
    .argument('<STATUS>', ORDER_STATUSES.join(', '))
    .option(...JSON_OPTION)
    .action(async (order: string, status: string, options: Output) => {
      if (!(ORDER_STATUSES as readonly string[]).includes(status)) throw new UsageError(`unknown status ${status}; statuses are ${ORDER_STATUSES.join(', ')}`)
      const change = await withDatabase(config(), (database) => setOrderStatus(database, order, status as OrderStatus))
      if (!change.ok && change.reason === 'not_found') throw new UsageError(`no order has number or id ${order}`)
      if (!change.ok) {
        const allowed = change.allowed.length > 0 ? `it can go to ${change.allowed.join(' or ')}` : 'it cannot change any more'
        throw new UsageError(`order ${order} is ${change.from}: it cannot go to ${status}; ${allowed}`)
      }
      print(options, change.order, `order ${change.order.orderNumber}: ${change.from} → ${change.order.status}`)
    })
  missingArguments.set(setStatus, 'orders set-status needs ORDER (number or id) and STATUS')
  orders.command('purge-test')
    .description('delete the test orders (made with test keys) created before an instant, with their items; live orders are never touched')
    .option('--before <iso>', 'only orders created before this instant: 2027-01-31 or 2027-01-31T12:00:00Z (default: now)')
    .option(...JSON_OPTION)
    .action(async (options: Output & { before?: string }) => {
      const before = options.before === undefined ? new Date() : parseInstant(options.before, '--before')
      const deleted = await withDatabase(config(), (database) => purgeTestOrders(database, before))
      print(options, { deleted }, `deleted ${deleted} test order${deleted === 1 ? '' : 's'} created before ${before.toISOString()}`)
    })
}
