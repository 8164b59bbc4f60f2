// A PostgreSQL topology of the test file's own, as stores run it at scale: a primary, a
// streaming replica of it, and PgBouncer in transaction mode in front of the primary, each
// in a temporary folder on a free port, stopped and removed at teardown. It takes seconds to
// start, so a test file starts one and shares it between its tests.
//
// PostgreSQL and PgBouncer both refuse to run as root: when the tests run as root, every
// command runs as the `postgres` user. In CI a test that needs the topology fails when it
// cannot start; elsewhere it is skipped with the reason.
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import type { Test } from 'tap'
import { migrateDatabase, openDatabase } from '../db/client.ts'
import type { TestContext } from './helper.ts'

const run = promisify(execFile)

const PG_BIN = process.env.TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin'
const PGBOUNCER = process.env.TEST_PGBOUNCER ?? '/usr/sbin/pgbouncer'

export interface TopologyOptions {
  replica?: boolean
  pooler?: boolean
  /** PgBouncer's default_pool_size: server connections per database. */
  poolSize?: number
}

export interface Topology {
  /** Session connections to the primary, on `database` (default `postgres`). */
  primaryUrl: (database?: string) => string
  /** The streaming replica; throws when the topology has none. */
  replicaUrl: (database?: string) => string
  /** PgBouncer (transaction mode) in front of the primary; throws when the topology has none. */
  poolerUrl: (database?: string) => string
  /** An empty database on the primary (and so on the replica), dropped at teardown; its name. */
  createDatabase: (t: TestContext, prefix?: string) => Promise<string>
  /** Stops the replica (fast shutdown), and starts it again. */
  stopReplica: () => Promise<void>
  startReplica: () => Promise<void>
  /** Waits until the replica has replayed everything the primary has written so far. */
  replicaCaughtUp: (timeoutMs?: number) => Promise<void>
  stop: () => Promise<void>
  /** The temporary folders it lives in, removed by stop(). */
  folders: readonly string[]
}

interface Missing { reason: string }

/** Why this machine cannot start the topology, or null when it can. */
function missingTools (options: TopologyOptions): Missing | null {
  for (const tool of ['initdb', 'pg_ctl', 'postgres', ...(options.replica ? ['pg_basebackup'] : [])]) {
    if (!existsSync(join(PG_BIN, tool))) return { reason: `${join(PG_BIN, tool)} is missing (install postgresql-15)` }
  }
  if (options.pooler && !existsSync(PGBOUNCER)) return { reason: `${PGBOUNCER} is missing (apt-get install -y pgbouncer)` }
  if (userInfo().uid === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) return { reason: 'running as root without a postgres user to run PostgreSQL as' }
  return null
}

/** A command as the user PostgreSQL runs as. */
async function asPostgres (command: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [file, argv] = userInfo().uid === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args]
  try {
    const { stdout } = await run(file, argv, { timeout: timeoutMs })
    return stdout
  } catch (err) {
    const e = err as { stderr?: string, message: string }
    throw new Error(`${command} ${args.join(' ')} failed: ${(e.stderr ?? '').trim() || e.message}`)
  }
}

async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

function ownedFolder (prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  if (userInfo().uid === 0) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim())
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim())
    chownSync(dir, uid, gid)
  }
  chmodSync(dir, 0o700)
  return dir
}

function writeOwned (dir: string, name: string, text: string): string {
  const file = join(dir, name)
  writeFileSync(file, text)
  if (userInfo().uid === 0) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim())
    chownSync(file, uid, -1)
  }
  return file
}

const url = (port: number, database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`

async function waitForSql (target: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const client = postgres(target, { max: 1, connect_timeout: 2, onnotice: () => {} })
    try {
      await client`select 1`
      return
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${target} did not answer in ${timeoutMs} ms: ${(err as Error).message}`)
    } finally {
      await client.end({ timeout: 1 })
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * Starts the topology for this test file and stops it at teardown. Returns null (after
 * skipping `t`) when this machine cannot run it outside CI; in CI it fails instead.
 */
export async function startTopology (t: Test, options: TopologyOptions = {}): Promise<Topology | null> {
  const missing = missingTools(options)
  if (missing !== null) {
    const message = `needs a PostgreSQL primary${options.replica ? ', a replica' : ''}${options.pooler ? ' and PgBouncer' : ''} of its own: ${missing.reason}`
    // Any non-empty CI is CI (CI systems set true, 1, yes…): there it fails rather than skips.
    if (process.env.CI) throw new Error(`CI: ${message}`)
    t.pass(message, { skip: message })
    return null
  }
  const topology = await launch(options)
  t.teardown(() => topology.stop())
  return topology
}

async function launch (options: TopologyOptions): Promise<Topology> {
  const folders: string[] = []
  const stops: Array<() => Promise<void>> = []
  const stop = async () => {
    for (const s of stops.reverse()) {
      try {
        await s()
      } catch {}
    }
    for (const dir of folders) rmSync(dir, { recursive: true, force: true })
  }
  try {
    const primaryDir = ownedFolder('sf-primary-')
    folders.push(primaryDir)
    const primaryPort = await freePort()
    await asPostgres(join(PG_BIN, 'initdb'), ['-D', primaryDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'])
    writeOwned(primaryDir, 'pg_hba.conf', [
      'local all all trust',
      'host all all 127.0.0.1/32 trust',
      'host replication all 127.0.0.1/32 trust',
      ''
    ].join('\n'))
    // Durability is not what these tests are about: no fsync keeps start-up and writes fast.
    const conf = join(primaryDir, 'postgresql.conf')
    writeFileSync(conf, `${readFileSync(conf, 'utf8')}
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 5
hot_standby = on
fsync = off
synchronous_commit = on
full_page_writes = off
max_connections = 200
shared_buffers = 32MB
`)
    const pgCtl = join(PG_BIN, 'pg_ctl')
    const startCluster = async (dir: string, port: number) => {
      await asPostgres(pgCtl, ['-D', dir, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', `-p ${port} -k ${dir}`, 'start'])
    }
    const stopCluster = async (dir: string) => {
      await asPostgres(pgCtl, ['-D', dir, '-m', 'immediate', '-w', 'stop'])
    }
    await startCluster(primaryDir, primaryPort)
    stops.push(() => stopCluster(primaryDir))
    await waitForSql(url(primaryPort))

    let replicaPort: number | undefined
    let replicaDir: string | undefined
    let replicaRunning = false
    if (options.replica) {
      replicaDir = ownedFolder('sf-replica-')
      folders.push(replicaDir)
      replicaPort = await freePort()
      // -R writes primary_conninfo and standby.signal: the copy starts as a streaming replica.
      await asPostgres(join(PG_BIN, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', replicaDir, '-R', '-X', 'stream', '--no-sync', '-c', 'fast'])
      await startCluster(replicaDir, replicaPort)
      replicaRunning = true
      const dir = replicaDir
      stops.push(async () => { if (replicaRunning) await stopCluster(dir) })
      await waitForSql(url(replicaPort))
    }

    let poolerPort: number | undefined
    if (options.pooler) {
      const poolerDir = ownedFolder('sf-pgbouncer-')
      folders.push(poolerDir)
      poolerPort = await freePort()
      writeOwned(poolerDir, 'userlist.txt', '"postgres" ""\n')
      const ini = writeOwned(poolerDir, 'pgbouncer.ini', `[databases]
* = host=127.0.0.1 port=${primaryPort}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${poolerPort}
unix_socket_dir = ${poolerDir}
auth_type = trust
auth_file = ${join(poolerDir, 'userlist.txt')}
admin_users = postgres
pool_mode = transaction
default_pool_size = ${options.poolSize ?? 4}
max_client_conn = 1000
server_reset_query =
logfile = ${join(poolerDir, 'pgbouncer.log')}
pidfile = ${join(poolerDir, 'pgbouncer.pid')}
`)
      await asPostgres(PGBOUNCER, ['-d', ini])
      stops.push(async () => {
        const pid = Number(readFileSync(join(poolerDir, 'pgbouncer.pid'), 'utf8'))
        process.kill(pid, 'SIGINT')
        for (let i = 0; i < 50; i++) {
          try {
            process.kill(pid, 0)
          } catch {
            return
          }
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        process.kill(pid, 'SIGKILL')
      })
      await waitForSql(url(poolerPort))
    }

    const admin = postgres(url(primaryPort), { max: 2, onnotice: () => {} })
    stops.push(async () => { await admin.end({ timeout: 2 }) })

    const topology: Topology = {
      primaryUrl: (database) => url(primaryPort, database),
      replicaUrl: (database) => {
        if (replicaPort === undefined) throw new Error('this topology has no replica')
        return url(replicaPort, database)
      },
      poolerUrl: (database) => {
        if (poolerPort === undefined) throw new Error('this topology has no pooler')
        return url(poolerPort, database)
      },
      createDatabase: async (t, prefix = 'sf_topo') => {
        const name = `${prefix}_${Date.now()}_${Math.random().toString(16).slice(2, 10)}`
        await admin.unsafe(`create database "${name}"`)
        t.teardown(async () => {
          try {
            await admin.unsafe(`drop database if exists "${name}" with (force)`)
          } catch {}
        })
        return name
      },
      stopReplica: async () => {
        if (replicaDir === undefined) throw new Error('this topology has no replica')
        await asPostgres(pgCtl, ['-D', replicaDir, '-m', 'fast', '-w', 'stop'])
        replicaRunning = false
      },
      startReplica: async () => {
        if (replicaDir === undefined || replicaPort === undefined) throw new Error('this topology has no replica')
        await startCluster(replicaDir, replicaPort)
        replicaRunning = true
        await waitForSql(url(replicaPort))
      },
      replicaCaughtUp: async (timeoutMs = 20_000) => {
        if (replicaPort === undefined) throw new Error('this topology has no replica')
        const [{ lsn }] = await admin<Array<{ lsn: string }>>`select pg_current_wal_lsn()::text as lsn`.then((rows) => rows as unknown as [{ lsn: string }])
        const replica = postgres(url(replicaPort), { max: 1, onnotice: () => {} })
        try {
          const deadline = Date.now() + timeoutMs
          for (;;) {
            const [row] = await replica<Array<{ behind: boolean }>>`select pg_last_wal_replay_lsn() < ${lsn}::pg_lsn as behind`
            if (row?.behind === false) return
            if (Date.now() > deadline) throw new Error(`the replica did not replay up to ${lsn} in ${timeoutMs} ms`)
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
        } finally {
          await replica.end({ timeout: 1 })
        }
      },
      stop,
      folders
    }
    return topology
  } catch (err) {
    await stop()
    throw err
  }
}

/**
 * A migrated database of its own on the topology's primary, opened as an instance behind the
 * pooler opens it (DATABASE_POOLER=transaction, DATABASE_DIRECT_URL for migrations); closed
 * at teardown. Open it again with `open` for a second instance.
 */
export async function pooledDatabase (t: Test, topology: Topology, options: { poolSize?: number, statementTimeoutMs?: number, replicas?: boolean, settleMs?: number } = {}) {
  const name = await topology.createDatabase(t)
  const open = async () => {
    const database = await openDatabase({
      url: topology.poolerUrl(name),
      pooler: 'transaction',
      directUrl: topology.primaryUrl(name),
      poolSize: options.poolSize ?? 8,
      ...(options.statementTimeoutMs === undefined ? {} : { statementTimeoutMs: options.statementTimeoutMs }),
      replicaUrls: options.replicas ? [topology.replicaUrl(name)] : [],
      replicaSettleMs: options.settleMs ?? 750
    })
    t.teardown(() => database.close())
    return database
  }
  const database = await open()
  await migrateDatabase(database)
  return { database, name, open }
}
