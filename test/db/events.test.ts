// The change log's one INSERT: both forms write the same columns, and an event type the
// union does not know is refused by the compiler and, when forced past it, before any SQL.
// A publication: one round trip inside its transaction, and nothing without the lock.
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import t from 'tap'
import { execute, type Db } from '../../db/client.ts'
import { insertEvents, publishEvents, recordEvents, type EventType } from '../../db/events.ts'
import { ADVISORY_LOCKS } from '../../db/locks.ts'
import { createTestDatabase, usingPostgres } from '../helper.ts'

const { database, url } = await createTestDatabase(t)
const { db } = database

interface Row { type: string, resource_id: string, api_key_id: string | null, data: Record<string, unknown> }
const written = (ids: string[]) => execute<Row>(db, sql`
  select type, resource_id::text, api_key_id::text, data from change_events
  where resource_id in (${sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)}) order by seq`)

t.test('a list of events is written as given, in one statement', async (t) => {
  const [product, order, key] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
  await recordEvents(db, [
    { type: 'product.updated', resourceId: product },
    { type: 'order.status_changed', resourceId: order, apiKeyId: key, data: { status: 'confirmed' } }
  ])
  t.same(await written([product, order]), [
    { type: 'product.updated', resource_id: product, api_key_id: null, data: {} },
    { type: 'order.status_changed', resource_id: order, api_key_id: key, data: { status: 'confirmed' } }
  ])
  // A transaction that fails any statement sent through it: an empty list must send none.
  const noStatement = new Proxy({}, { get: (_target, name) => { throw new Error(`a statement was sent (${String(name)})`) } })
  await t.resolves(recordEvents(noStatement as typeof db, []), 'no events, no statement')
  t.throws(() => insertEvents([]), /no events/, 'an empty list is no statement')
})

t.test('rows of a statement become events, their type chosen per row', async (t) => {
  const [fresh, known] = [crypto.randomUUID(), crypto.randomUUID()]
  await db.execute(sql`with input as (
      select * from (values (${fresh}::uuid, true), (${known}::uuid, false)) as x(id, created)
    ), events as (
      ${insertEvents({ type: { when: sql`created`, then: 'product.created', else: 'product.updated' }, resourceId: sql`id`, from: sql`input` })}
    ) select 1`)
  t.same(await written([fresh, known]), [
    { type: 'product.created', resource_id: fresh, api_key_id: null, data: {} },
    { type: 'product.updated', resource_id: known, api_key_id: null, data: {} }
  ])
})

t.test('an event type outside the union is refused', async (t) => {
  t.throws(() => insertEvents({
    // @ts-expect-error the compiler refuses a type the union does not name
    type: 'product.renamed',
    resourceId: sql`id`,
    from: sql`input`
  }), /not an event type: product\.renamed/)
  t.throws(() => insertEvents({ type: { when: sql`true`, then: 'product.created', else: 'product.gone' as EventType }, resourceId: sql`id`, from: sql`input` }),
    /not an event type: product\.gone/)
  // A quote cannot reach the statement either.
  const events = async () => (await execute<{ n: number }>(db, sql`select count(*)::int as n from change_events`))[0]!.n
  const before = await events()
  await t.rejects(recordEvents(db, [{ type: 'product.updated\'; drop table change_events; --' as EventType, resourceId: crypto.randomUUID() }]), /not an event type/)
  t.equal(await events(), before, 'the change log is still there, nothing written to it')
})

/**
 * The database as the publisher sees it, counting what it sends: each statement, and how many
 * were sent before the one before them had answered (sent together, in one round trip).
 */
function counting (target: Db) {
  const seen = { statements: 0, sentTogether: 0, transactions: 0 }
  let waiting = 0
  const wrap = <D extends object>(inner: D): D => new Proxy(inner, {
    get (on, property, receiver) {
      if (property === 'execute') {
        return (query: unknown) => {
          seen.statements++
          if (waiting > 0) seen.sentTogether++
          waiting++
          // Drizzle's answer runs its query at each then(): made a promise once, it runs once.
          const answer = Promise.resolve((on as unknown as { execute: (q: unknown) => PromiseLike<unknown> }).execute(query))
          const done = () => { waiting-- }
          answer.then(done, done)
          return answer
        }
      }
      if (property === 'transaction') {
        return (work: (tx: unknown) => Promise<unknown>) => {
          seen.transactions++
          return (on as unknown as { transaction: (w: (tx: object) => Promise<unknown>) => Promise<unknown> }).transaction((tx) => work(wrap(tx)))
        }
      }
      return Reflect.get(on, property, receiver)
    }
  })
  return { db: wrap(target), seen }
}

t.test('a publication sends its lock and its batch together: one round trip inside its transaction', async (t) => {
  const ids = [crypto.randomUUID(), crypto.randomUUID()]
  await recordEvents(db, ids.map((id) => ({ type: 'product.updated' as const, resourceId: id })))
  const [waiting] = await execute<{ n: number }>(db, sql`select count(*)::int as n from change_events where position is null`)
  const { db: observed, seen } = counting(db)
  t.equal(await publishEvents(observed, 1000), waiting!.n, 'it published every waiting event')
  t.same(seen, { statements: 3, sentTogether: 1, transactions: 1 }, 'the probe, then the lock and the batch sent together')
  const rows = await execute<{ position: number }>(db, sql`select position::int from change_events where resource_id in (${sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `)}) order by seq`)
  t.same(rows.map((r) => r.position), [rows[0]!.position, rows[0]!.position + 1], 'numbered in the order they were written, without a hole')
})

t.test('a publisher without the lock publishes nothing', { skip: usingPostgres ? false : 'needs TEST_DATABASE_URL: another connection holds the lock' }, async (t) => {
  const id = crypto.randomUUID()
  await recordEvents(db, [{ type: 'product.updated', resourceId: id }])
  const other = postgres(url!, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let held!: () => void
  const holding = new Promise<void>((resolve) => { held = resolve })
  const publisher = other.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${ADVISORY_LOCKS.eventPublisher})`
    held()
    await released
  })
  await holding
  t.equal(await publishEvents(db, 1000), 0, 'another publisher holds the lock: nothing published')
  const position = async () => (await execute<{ position: number | null }>(db, sql`select position from change_events where resource_id = ${id}::uuid`))[0]!.position
  t.equal(await position(), null, 'the event waits')
  release()
  await publisher
  t.equal(await publishEvents(db, 1000), 1, 'once the lock is free, it is published')
  t.not(await position(), null, 'with its position')
})
