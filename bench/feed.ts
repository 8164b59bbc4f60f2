// The changes feed for the benchmark: published events written straight into change_events
// (positions 1…N without a gap, published in the past, as the app's publisher leaves them),
// so the feed scenarios read a long feed without creating N changes first.
import { sql } from 'drizzle-orm'
import { execute, type Database } from '../db/client.ts'

/** Events a statement writes. */
const CHUNK = 100_000
/** The key of the order events the bench key may not see (no such key exists: the feed only compares ids). */
export const OTHER_KEY_ID = '00000000-0000-4000-8000-0000000000ee'

export interface SeededFeed {
  /** Events written: positions 1…count. */
  count: number
  /** How many of them the bench key (every scope) sees: product events and its own orders'. */
  visible: number
  ms: number
}

/**
 * Writes `count` published events, positions 1…count, one every 100 ms of the past ending a
 * minute ago (long settled): in every 10, three `order.created` of the bench key, one of
 * another key (hidden from the bench key), six `product.updated` of products spread over the
 * catalogue (the list positions must be filled). The feed's publisher numbers later events
 * from count + 1 on.
 */
export async function seedFeed (database: Database, options: { count: number, benchKeyId: string }): Promise<SeededFeed> {
  const started = performance.now()
  const { count, benchKeyId } = options
  const [existing] = await execute<{ n: string }>(database.db, sql`select count(*)::text as n from change_events`)
  if (Number(existing!.n) !== 0) throw new Error('seedFeed: change_events is not empty')
  const [products] = await execute<{ n: number }>(database.db, sql`select count(*)::int as n from product_list_positions where list = ''`)
  if (products!.n === 0) throw new Error('seedFeed: the list positions are empty (fill the catalogue first)')
  await database.db.transaction(async (tx) => {
    for (let from = 1; from <= count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK - 1)
      await tx.execute(sql`
        insert into change_events (position, type, resource_id, api_key_id, data, occurred_at, published_at)
        select g,
          case when g % 10 < 4 then 'order.created' else 'product.updated' end,
          case when g % 10 < 4 then gen_random_uuid() else pl.product_id end,
          case when g % 10 < 3 then ${benchKeyId}::uuid when g % 10 = 3 then ${OTHER_KEY_ID}::uuid end,
          case when g % 10 < 4 then jsonb_build_object('orderNumber', (1000000 + g)::text, 'status', 'pending') else '{}'::jsonb end,
          t.at, t.at + interval '50 milliseconds'
        from generate_series(${from}::bigint, ${to}::bigint) g
        cross join lateral (select now() - interval '1 minute' - (${count}::bigint - g) * interval '100 milliseconds' as at) t
        left join product_list_positions pl on pl.list = '' and pl.position = 1 + (g * 7919) % ${products!.n}`)
    }
  })
  await database.db.execute(sql`vacuum analyze change_events`)
  const [row] = await execute<{ visible: number, first: number, last: number, n: number }>(database.db, sql`
    select count(*) filter (where api_key_id is null or api_key_id = ${benchKeyId}::uuid)::int as visible,
      min(position)::int as first, max(position)::int as last, count(*)::int as n
    from change_events`)
  if (row!.n !== count || row!.first !== 1 || row!.last !== count) throw new Error(`seedFeed: positions ${row!.first}…${row!.last} for ${row!.n} events, expected 1…${count}`)
  return { count, visible: row!.visible, ms: performance.now() - started }
}
