// Outcomes recorded a batch at a time (recordOutcomes): each row as its attempt says (the
// retry's time exactly as given, failed after the last), only while its lease holds, and each
// endpoint once, as its outcomes in the batch say in the order of their attempts.
import { sql } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../app.ts'
import { execute, type Tx } from '../../db/client.ts'
import { claimDeliveries, oldestDueDeliveryAge, recordOutcomes, type AttemptOutcome, type ClaimedDelivery } from '../../db/webhooks.ts'
import { authHeaders, buildTestApp, makeKey, readingRows } from '../helper.ts'
import { WEBHOOK_TEST_ENV } from '../webhook-receiver.ts'

const HOUR = 3_600_000
const RULE = { disableAfterMs: HOUR, reason: 'Disabled automatically: test' }

/** An endpoint of `key`'s on a port nothing listens on, made as integrators make one; its id. */
async function createEndpoint (app: App, key: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/external/v1/webhooks',
    headers: { ...authHeaders(key), 'content-type': 'application/json' },
    payload: JSON.stringify({ url: 'http://127.0.0.1:9/hook' })
  })
  return res.json<{ id: string }>().id
}

/** Queues deliveries `from`…`to` of an endpoint, each due that many seconds ago. */
async function queueDue (db: Tx, endpointId: string, from: number, to: number): Promise<void> {
  await execute(db, sql`insert into webhook_deliveries (endpoint_id, position, type, resource_id, data, occurred_at, next_attempt_at)
    select ${endpointId}::uuid, g, 'product.updated', gen_random_uuid(), '{}'::jsonb, now(), now() - make_interval(secs => g)
    from generate_series(${from}::int, ${to}::int) g`)
}

t.test('a batch of outcomes: retry times, the last failure, lost leases, and each endpoint\'s failing window', async (t) => {
  // Nothing is published, so the worker (polling once an hour) claims nothing: the test does.
  const app = await buildTestApp(t, { env: { ...WEBHOOK_TEST_ENV, WEBHOOK_POLL_MS: '3600000' } })
  await app.ready()
  const { db } = app.database
  const { key } = await makeKey(app)
  const endpoint = () => createEndpoint(app, key)
  // failing: failing for a day; recovering: failing for a day, then a success after a failure;
  // relapsing: a success, then a failure; first: its first failure; lost: another holder's lease.
  const [failing, recovering, relapsing, first] = [await endpoint(), await endpoint(), await endpoint(), await endpoint()]
  await execute(db, sql`update webhook_endpoints set failing_since = now() - interval '1 day' where id in (${failing}::uuid, ${recovering}::uuid)`)
  await execute(db, sql`update webhook_endpoints set last_success_at = now() where id = ${relapsing}::uuid`)
  const queue = async (endpointId: string, positions: number[]) => {
    for (const position of positions) {
      await execute(db, sql`insert into webhook_deliveries (endpoint_id, position, type, resource_id, data, occurred_at, next_attempt_at)
        values (${endpointId}::uuid, ${position}, 'product.updated', gen_random_uuid(), '{}'::jsonb, now(), now())`)
    }
  }
  await queue(failing, [1, 2])
  await queue(recovering, [3, 4])
  await queue(relapsing, [5, 6])
  await queue(first, [7, 8])
  const claims = await claimDeliveries(db, 100, 60_000)
  t.equal(claims.length, 8, 'all claimed')
  const at = (position: number) => claims.find((c) => c.position === position)!
  // Another instance holds position 8 now (as after this one's lease ended).
  await execute(db, sql`update webhook_deliveries set lease_until = now() + interval '1 hour' where id = ${at(8).id}::bigint`)

  const t0 = Date.now()
  const when = (ms: number) => new Date(t0 + ms)
  const retryAt = new Date(t0 + 5_123)
  const failure = (claim: ClaimedDelivery, ms: number, nextAttemptAt: Date | null): AttemptOutcome => ({ claim, ok: false, status: 500, at: when(ms), nextAttemptAt })
  const success = (claim: ClaimedDelivery, ms: number): AttemptOutcome => ({ claim, ok: true, status: 204, at: when(ms), nextAttemptAt: null })
  const { recorded, disabled } = await recordOutcomes(db, [
    failure(at(1), 0, retryAt),
    failure(at(2), 1, null),
    failure(at(3), 0, retryAt),
    success(at(4), 1),
    success(at(5), 0),
    failure(at(6), 1, retryAt),
    failure(at(7), 0, retryAt),
    failure(at(8), 0, retryAt)
  ], RULE)
  t.same([...recorded].sort(), [1, 2, 3, 4, 5, 6, 7].map((p) => at(p).id).sort(), 'every row but the one whose lease was lost')
  t.same([...disabled], [failing], 'only the endpoint that failed all the window long is disabled now')

  const rows = new Map((await execute<{ position: number, status: string, attempts: number, next: string | null, leased: boolean, last_status: number | null }>(db, sql`
    select position::int, status, attempts, next_attempt_at::text as next, lease_until is not null as leased, last_response_status as last_status
    from webhook_deliveries`)).map((r) => [r.position, r]))
  const retry = (await execute<{ at: string }>(db, sql`select ${retryAt.toISOString()}::timestamptz::text as at`))[0]!.at
  t.match(rows.get(1), { status: 'pending', attempts: 1, next: retry, leased: false, last_status: 500 }, 'a failure is due again exactly when the worker said')
  t.match(rows.get(2), { status: 'failed', attempts: 1, next: null, leased: false }, 'after the last retry: failed')
  t.match(rows.get(4), { status: 'succeeded', attempts: 1, next: null, leased: false, last_status: 204 })
  t.match(rows.get(8), { status: 'pending', attempts: 0, leased: true }, 'the other holder\'s row untouched')

  const endpoints = new Map((await execute<{ id: string, status: string, reason: string | null, failing: boolean, recent_failure: boolean }>(db, sql`
    select id::text, status, disabled_reason as reason, failing_since is not null as failing,
      coalesce(failing_since > now() - interval '1 minute', false) as recent_failure
    from webhook_endpoints`)).map((r) => [r.id, r]))
  t.match(endpoints.get(failing), { status: 'disabled', reason: RULE.reason, failing: true })
  t.match(endpoints.get(recovering), { status: 'enabled', reason: null, failing: false }, 'ending on a success: no longer failing')
  t.match(endpoints.get(relapsing), { status: 'enabled', failing: true, recent_failure: true }, 'a failure after the batch\'s success: failing since now')
  t.match(endpoints.get(first), { status: 'enabled', failing: true, recent_failure: true }, 'a first failure opens the window')

  // The same statement with nothing in it does nothing.
  t.same(await recordOutcomes(db, [], RULE), { recorded: new Set(), disabled: new Set() })
})

t.test('a claim reads about as many deliveries as it claims, even with statistics taken while the queue was empty', async (t) => {
  const app = await buildTestApp(t, { env: { ...WEBHOOK_TEST_ENV, WEBHOOK_POLL_MS: '3600000' } })
  await app.ready()
  const { db } = app.database
  const { key } = await makeKey(app)
  const endpointId = await createEndpoint(app, key)
  // A queue is often empty when its statistics are taken; then 3,000 deliveries fall due.
  await execute(db, sql`analyze webhook_deliveries`)
  await queueDue(db, endpointId, 1, 3000)
  const { result: claims, rowsRead } = await readingRows(db, 'webhook_deliveries', (tx) => claimDeliveries(tx, 5, 60_000))
  t.same(claims.map((c) => c.position).sort((a, b) => a - b), [2996, 2997, 2998, 2999, 3000], 'the five due the longest')
  // Read in the due index's order: the five claimed, and their rows again to lease them.
  // Reading every due row and sorting them read all 3,000.
  t.ok(rowsRead <= 20, `${rowsRead} rows read to claim 5 of 3,000 due`)
})

t.test('the gauge of the oldest due delivery reads a few rows, skipping disabled endpoints, even with statistics taken while the queue was empty', async (t) => {
  const app = await buildTestApp(t, { env: { ...WEBHOOK_TEST_ENV, WEBHOOK_POLL_MS: '3600000' } })
  await app.ready()
  const { db } = app.database
  const { key } = await makeKey(app)
  const enabled = await createEndpoint(app, key)
  const disabled = await createEndpoint(app, key)
  await execute(db, sql`update webhook_endpoints set status = 'disabled' where id = ${disabled}::uuid`)
  await execute(db, sql`analyze webhook_deliveries`)
  // 3,000 due for the enabled endpoint, the oldest 3,000 s ago; older ones for the disabled one, which nothing will attempt.
  await queueDue(db, enabled, 1, 3000)
  await queueDue(db, disabled, 3001, 3005)
  const { result: age, rowsRead } = await readingRows(db, 'webhook_deliveries', (tx) => oldestDueDeliveryAge(tx))
  t.ok(age >= 3000 && age < 3060, `the oldest due of an enabled endpoint: ${age} s`)
  // The five of the disabled endpoint are passed over, then the first of the enabled one ends it.
  // The former min over the due rows read 3,000 of them here.
  t.ok(rowsRead <= 20, `${rowsRead} rows read to find the oldest of 3,000 due`)
  await execute(db, sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null where endpoint_id = ${enabled}::uuid`)
  t.equal(await oldestDueDeliveryAge(db), 0, 'nothing due for an enabled endpoint: 0')
})
