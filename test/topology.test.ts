// The test topology itself: a primary, a streaming replica of it and PgBouncer in
// transaction mode, all started by the test file and gone after it.
import { existsSync } from 'node:fs'
import postgres from 'postgres'
import t from 'tap'
import { startTopology } from './topology.ts'

const topology = await startTopology(t, { replica: true, pooler: true, poolSize: 2 })

if (topology !== null) {
  t.test('the replica streams from the primary and is in recovery', async (t) => {
    const name = await topology.createDatabase(t)
    const primary = postgres(topology.primaryUrl(name), { max: 1, onnotice: () => {} })
    const replica = postgres(topology.replicaUrl(name), { max: 1, onnotice: () => {} })
    t.teardown(async () => { await primary.end(); await replica.end() })
    await primary`create table marks (n int)`
    await primary`insert into marks values (7)`
    await topology.replicaCaughtUp()
    t.same(await replica`select pg_is_in_recovery() as recovering, (select n from marks) as n`, [{ recovering: true, n: 7 }])
    await t.rejects(replica`insert into marks values (8)`, { code: '25006' }, 'the replica is read-only')
  })

  t.test('PgBouncer multiplexes many clients over a pool of two in transaction mode', async (t) => {
    const pooled = postgres(topology.poolerUrl(), { max: 12, prepare: false, onnotice: () => {} })
    t.teardown(() => pooled.end())
    const pids = await Promise.all(Array.from({ length: 12 }, () => pooled.begin(async (tx) => {
      const [row] = await tx<Array<{ pid: number }>>`select pg_backend_pid() as pid, pg_sleep(0.05)`
      return row!.pid
    })))
    t.ok(new Set(pids).size <= 2, `twelve transactions ran on at most two server connections (${new Set(pids).size})`)
  })

  t.test('PgBouncer refuses start-up parameters it does not know', async (t) => {
    const strict = postgres(topology.poolerUrl(), { max: 1, connection: { jit: 'off' }, onnotice: () => {} })
    t.teardown(() => strict.end())
    await t.rejects(strict`select 1`, /unsupported startup parameter/)
  })

  t.test('teardown removes the folders', async (t) => {
    const scratch = (await startTopology(t, {}))!
    t.ok(scratch.folders.every((dir) => existsSync(dir)))
    await scratch.stop()
    t.ok(scratch.folders.length > 0 && scratch.folders.every((dir) => !existsSync(dir)), 'no folder is left')
  })
}
