// Every PostgreSQL advisory lock the service takes, in one place so no two share a number.
// Any fixed numbers: every instance takes the same ones.
export const ADVISORY_LOCKS = {
  /** Migrations: instances starting at once apply them one at a time. */
  migration: 7_246_001,
  /** Catalogue imports, one at a time. */
  catalogImport: 7_246_002,
  /** Publishing change events: one publisher at a time gives out feed positions. */
  eventPublisher: 7_246_003,
  /**
   * An export's slot (the first of the two-key form; the second is a hash of the key and the
   * slot's number), held by its snapshot transaction: a key's exports at once, fleet-wide.
   */
  exportSlot: 7_246_004
} as const
