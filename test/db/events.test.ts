// The change log's one INSERT: both forms write the same columns, and an event type the
// union does not know is refused by the compiler and, when forced past it, before any SQL.
import { sql } from 'drizzle-orm'
import t from 'tap'
import { execute } from '../../db/client.ts'
import { insertEvents, recordEvents, type EventType } from '../../db/events.ts'
import { createTestDatabase } from '../helper.ts'

const { database } = await createTestDatabase(t)
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
