// Deleting what is past its retention, a batch at a time, so no statement holds many locks
// or runs long; the batches of several instances skip each other's rows.

/** The instant before which `retentionDays` days ago lies. */
export const retentionCutoff = (retentionDays: number, now: Date): Date => new Date(now.getTime() - retentionDays * 86_400_000)

/** Calls `deleteBatch` until it deletes fewer than `batch`; returns how many it deleted in all. */
export async function deleteInBatches (deleteBatch: (batch: number) => Promise<number>, batch: number): Promise<number> {
  let total = 0
  for (;;) {
    const deleted = await deleteBatch(batch)
    total += deleted
    if (deleted < batch) return total
  }
}
