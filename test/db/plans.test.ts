// Plans the database keeps. lock_sellables (every order and hold) takes its ids as arrays, for
// which PostgreSQL's plan cache chose a custom plan and planned the function's statements again
// on every call (0.88 ms a call against 0.26 ms with its generic plan, the same index scans).
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { createTestDatabase } from '../helper.ts'

t.test('lock_sellables runs with its generic plans, whatever the session says', async (t) => {
  const { database } = await createTestDatabase(t)
  const [fn] = await execute<{ config: string | null }>(database.db, sql`select array_to_string(proconfig, ' ') as config from pg_proc where proname = 'lock_sellables'`)
  t.equal(fn?.config, 'plan_cache_mode=force_generic_plan')
  // The setting goes with the call and back: the session's own is untouched.
  await execute(database.db, sql`select * from lock_sellables('{}'::uuid[], '{}'::uuid[], false)`)
  const [mode] = await execute<{ mode: string }>(database.db, sql`select current_setting('plan_cache_mode') as mode`)
  t.equal(mode?.mode, 'auto')
})
