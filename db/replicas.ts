// Streaming replicas for catalogue reads, used only while they are known to be fresh enough.
//
// The rule: every poll interval the primary's WAL position (pg_current_wal_lsn()) and the
// catalogue version are sampled together, then each replica's replay position. A catalogue
// read may go to a replica only when
//   - that sample began less than READ_SETTLE_MS ago: the feed shows an event only that long
//     after it was published, and it was committed before, so the sample's position is past
//     the commit of every change the feed has shown to anyone by now;
//   - the replica had replayed up to the sample's position: it shows all of those changes;
//   - the sample's catalogue version is at least the one this instance's cache is keyed on,
//     so a read cached under a version never comes from a replica older than that version.
// Anything else (no recent sample, the replica unreachable, paused or behind) and the primary
// answers; a replica read that fails is answered by the primary too.
import type postgres from 'postgres'
import { describeDatabaseFailure, type DatabaseRole } from '../lib/database-failure.ts'

/** A replica's connection; `D` is the query builder over it (client.ts's Db). */
export interface ReplicaConnection<D> {
  /** `replica1`, `replica2`…: the label in metrics. */
  name: string
  /** `replica 1`, `replica 2`…: its role in connection failures. */
  role: DatabaseRole
  url: string
  client: postgres.Sql
  db: D
}

export interface ReplicaStatus {
  name: string
  /** Whether the last sample reached it. */
  reachable: boolean
  /** Bytes of WAL the primary had written that it had not replayed, at the last sample. */
  lagBytes: number | null
  /** Seconds since the last transaction it replayed was committed on the primary (grows while the primary is idle). */
  replayDelaySeconds: number | null
  paused: boolean
}

interface Fresh {
  sampledAt: number
  primaryLsn: bigint
  version: bigint
  replayLsn: bigint
}

/** A pg_lsn's text (`16/B374D848`) as a number of bytes. */
export function lsnBytes (text: string): bigint {
  const [high, low] = text.split('/')
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}

export class ReplicaSet<D> {
  readonly reads = new Map<string, number>([['primary', 0]])
  readonly #primary: postgres.Sql
  readonly #replicas: ReplicaConnection<D>[]
  readonly #fresh = new Map<string, Fresh>()
  readonly #status = new Map<string, ReplicaStatus>()
  readonly #reported = new Set<string>()
  readonly #settleMs: number
  #next = 0

  constructor (primary: postgres.Sql, replicas: ReplicaConnection<D>[], options: { settleMs: number }) {
    this.#primary = primary
    this.#replicas = replicas
    this.#settleMs = options.settleMs
    for (const r of replicas) {
      this.reads.set(r.name, 0)
      this.#status.set(r.name, { name: r.name, reachable: false, lagBytes: null, replayDelaySeconds: null, paused: false })
    }
  }

  /**
   * One sample of the primary and every replica; what fails leaves that replica unused.
   * Returns a line for each replica that has just stopped answering (once, until it answers
   * again), naming it and the cause.
   */
  async sample (): Promise<string[]> {
    const sampledAt = Date.now()
    let primary: { lsn: string, version: string }
    try {
      const [row] = await this.#primary<Array<{ lsn: string, version: string }>>`
        select pg_current_wal_lsn()::text as lsn,
               (select (case when is_called then last_value else 0 end)::text from catalog_version_seq) as version`
      primary = row!
    } catch {
      // The primary's own failure is the state poll's and the requests' to report.
      this.#fresh.clear()
      return []
    }
    const primaryLsn = lsnBytes(primary.lsn)
    const failures: string[] = []
    await Promise.all(this.#replicas.map(async (replica) => {
      try {
        const [row] = await replica.client<Array<{ lsn: string | null, paused: boolean, delay: number | null }>>`
          select pg_last_wal_replay_lsn()::text as lsn,
                 pg_is_in_recovery() and pg_is_wal_replay_paused() as paused,
                 extract(epoch from now() - pg_last_xact_replay_timestamp())::float8 as delay`
        // Not in recovery (a promoted or wrong server) has no replay position: never used.
        if (row?.lsn == null) throw new Error(`${replica.name} is not a streaming replica`)
        const replayLsn = lsnBytes(row.lsn)
        this.#fresh.set(replica.name, { sampledAt, primaryLsn, version: BigInt(primary.version), replayLsn })
        this.#reported.delete(replica.name)
        this.#status.set(replica.name, {
          name: replica.name,
          reachable: true,
          lagBytes: Number(primaryLsn > replayLsn ? primaryLsn - replayLsn : 0n),
          replayDelaySeconds: row.delay,
          paused: row.paused
        })
      } catch (err) {
        this.#fresh.delete(replica.name)
        if (!this.#reported.has(replica.name)) {
          this.#reported.add(replica.name)
          failures.push(`${describeDatabaseFailure(err, { url: replica.url, role: replica.role })}; catalogue reads go to the primary meanwhile`)
        }
        this.#status.set(replica.name, { name: replica.name, reachable: false, lagBytes: null, replayDelaySeconds: null, paused: false })
      }
    }))
    return failures
  }

  /** A replica fresh enough for a read by an instance that knows `catalogVersion`, or null. */
  choose (catalogVersion: string, now = Date.now()): ReplicaConnection<D> | null {
    const known = BigInt(catalogVersion || '0')
    for (let i = 0; i < this.#replicas.length; i++) {
      const replica = this.#replicas[(this.#next + i) % this.#replicas.length]!
      const fresh = this.#fresh.get(replica.name)
      if (fresh === undefined) continue
      if (now - fresh.sampledAt >= this.#settleMs) continue
      if (fresh.replayLsn < fresh.primaryLsn || fresh.version < known) continue
      this.#next = (this.#next + i + 1) % this.#replicas.length
      return replica
    }
    return null
  }

  /** Runs a catalogue read on a fresh replica when there is one, else (or when it fails) on the primary. */
  async read<T> (primary: D, catalogVersion: string, run: (db: D) => Promise<T>): Promise<T> {
    const replica = this.choose(catalogVersion)
    if (replica !== null) {
      try {
        const result = await run(replica.db)
        this.#count(replica.name)
        return result
      } catch {
        // Unused until the next sample shows it fresh again; the primary answers this read.
        this.#fresh.delete(replica.name)
      }
    }
    const result = await run(primary)
    this.#count('primary')
    return result
  }

  status (): ReplicaStatus[] {
    return [...this.#status.values()]
  }

  #count (name: string): void {
    this.reads.set(name, (this.reads.get(name) ?? 0) + 1)
  }
}
