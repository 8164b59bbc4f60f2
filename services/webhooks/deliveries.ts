// The deliveries as a whole: how far behind they are, and forgetting finished ones.
import type { Database } from '../../db/client.ts'
import { oldestDueDeliveryAge as readOldestDueAge, pruneDeliveries } from '../../db/webhooks.ts'
import { deleteInBatches, retentionCutoff } from '../../lib/retention.ts'

/** Seconds the oldest due delivery has waited (0 when none waits): the worker's lag. */
export function oldestDueDeliveryAge (database: Database): Promise<number> {
  return readOldestDueAge(database.db)
}

/**
 * Deletes succeeded and failed deliveries older than the changes feed's retention. Pending
 * ones stay whatever their age: each keeps a copy of its event, so the feed's retention
 * never waits for them and they never lose what they deliver.
 */
export async function forgetOldDeliveries (database: Database, retentionDays: number, now = new Date(), batch = 10_000): Promise<number> {
  const cutoff = retentionCutoff(retentionDays, now)
  return deleteInBatches((size) => pruneDeliveries(database.db, cutoff, size), batch)
}
