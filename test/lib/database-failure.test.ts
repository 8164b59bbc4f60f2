// What a database failure means: the one classification the HTTP error handler and every
// operator command share, and the one line an operator reads.
import t from 'tap'
import {
  causeChain, classifyDatabaseFailure, databaseAddress, describeDatabaseFailure, errorCodes, firstLine,
  isDatabaseUnavailable, isDriverSocketFault, primaryLocation, rootCause, sessionLocation
} from '../../lib/database-failure.ts'

/** An error as the driver raises it: a message and a code. */
function coded (code: string, message = `${code} happened`): Error {
  return Object.assign(new Error(message), { code })
}

/** How Drizzle reports a failed query: its message is the SQL, the driver's error is the cause. */
function failedQuery (cause: unknown): Error {
  return new Error('Failed query: select "id", "name", "key_hash" from "api_keys"\nparams: ', { cause })
}

const primary = { url: 'postgres://app:secret@db.internal:6543/store', role: 'primary' } as const

t.test('the cause chain: outermost first, an AggregateError read through its first error', async (t) => {
  const inner = coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1')
  const outer = failedQuery(inner)
  t.same(causeChain(outer).map((e) => e.message), [outer.message, inner.message])
  t.same(errorCodes(outer), ['ECONNREFUSED'])
  t.equal(rootCause(outer), inner, 'the innermost error that carries a code')
  const uncoded = new Error('outer', { cause: new Error('inner') })
  t.equal(rootCause(uncoded).message, 'inner', 'else the innermost')
  t.same(rootCause(undefined), {}, 'nothing to walk')
  const both = new AggregateError([coded('ECONNREFUSED', 'connect ECONNREFUSED ::1:5432'), coded('ECONNREFUSED')], 'all failed')
  t.same(errorCodes(both), ['ECONNREFUSED'], 'the first of an AggregateError')
  const cycle: { message: string, cause?: unknown } = { message: 'me' }
  cycle.cause = cycle
  t.equal(causeChain(cycle).length, 10, 'a cycle is cut off')
})

t.test('firstLine never shows the SQL of a failed query', async (t) => {
  t.equal(firstLine('Failed query: select 1\nparams: '), 'a query failed')
  t.equal(firstLine('line one\nline two'), 'line one')
  t.equal(firstLine(undefined), 'unknown error')
})

t.test('each kind of failure, through a Drizzle wrapper', async (t) => {
  const cases: Array<[unknown, string | null, string]> = [
    [coded('ECONNREFUSED'), 'unreachable', 'connection refused'],
    [coded('ENOTFOUND'), 'unreachable', 'the host name could not be resolved'],
    [coded('EAI_AGAIN'), 'unreachable', 'the host name could not be resolved'],
    [coded('EHOSTUNREACH'), 'unreachable', 'the host is unreachable'],
    [coded('ENETUNREACH'), 'unreachable', 'the network is unreachable'],
    [coded('ECONNRESET'), 'unreachable', 'the connection was reset'],
    [coded('EPIPE'), 'unreachable', 'the connection was closed'],
    [coded('CONNECTION_CLOSED'), 'unreachable', 'the connection was closed'],
    [coded('CONNECTION_ENDED'), 'unreachable', 'the connection was closed'],
    [coded('CONNECTION_DESTROYED'), 'unreachable', 'the connection was closed'],
    [coded('08006', 'connection failure'), 'unreachable', 'connection failure'],
    [coded('57P01', 'terminating connection due to administrator command'), 'unreachable', 'terminating connection due to administrator command'],
    [coded('57P03', 'the database system is starting up'), 'unreachable', 'the database system is starting up'],
    [coded('53300', 'sorry, too many clients already'), 'unreachable', 'sorry, too many clients already'],
    [coded('ETIMEDOUT'), 'timeout', 'the connection timed out'],
    [coded('CONNECT_TIMEOUT'), 'timeout', 'the connection timed out'],
    [coded('57014', 'canceling statement due to statement timeout'), 'timeout', 'canceling statement due to statement timeout'],
    [coded('28P01', 'password authentication failed for user "app"'), 'authentication', 'password authentication failed for user "app"'],
    [coded('28000', 'no pg_hba.conf entry for host'), 'authentication', 'no pg_hba.conf entry for host'],
    [coded('SASL_SIGNATURE_MISMATCH'), 'authentication', 'authentication failed'],
    [coded('AUTH_TYPE_NOT_IMPLEMENTED'), 'authentication', 'authentication failed: the server asks for an unsupported method'],
    [coded('3D000', 'database "store" does not exist'), 'missing_database', 'database "store" does not exist'],
    [coded('42P01', 'relation "api_keys" does not exist'), 'not_migrated', 'relation "api_keys" does not exist'],
    [coded('08P01', 'unsupported startup parameter: jit'), 'pooler_refusal', 'unsupported startup parameter: jit; behind a transaction pooler set DATABASE_POOLER=transaction'],
    [coded('26000', 'prepared statement "s1" does not exist'), 'pooler_refusal', 'prepared statement "s1" does not exist; behind a transaction pooler set DATABASE_POOLER=transaction'],
    [coded('POOLER_MISMATCH', 'the database at h:1 is behind a transaction pooler: set DATABASE_POOLER=transaction'), 'pooler_refusal', 'the database at h:1 is behind a transaction pooler: set DATABASE_POOLER=transaction'],
    [coded('23505', 'duplicate key value violates unique constraint'), null, ''],
    [new TypeError('x is not a function'), null, ''],
    ['a string', null, '']
  ]
  for (const [err, kind, reason] of cases) {
    const what = (err as Error).message ?? String(err)
    const wrapped = failedQuery(err)
    t.same(classifyDatabaseFailure(wrapped), kind === null ? null : { kind, reason }, `${what}: ${kind ?? 'not the database'}`)
    t.equal(isDatabaseUnavailable(wrapped), kind !== null && kind !== 'not_migrated', `${what}: ${kind !== null && kind !== 'not_migrated' ? '503' : 'not a 503'}`)
  }
})

t.test('the operator reads one line naming the database and its role, never SQL', async (t) => {
  const line = (err: unknown, where: Parameters<typeof describeDatabaseFailure>[1] = primary) => describeDatabaseFailure(failedQuery(err), where)
  t.equal(line(coded('ECONNREFUSED')), 'cannot reach the database at db.internal:6543 (primary): connection refused')
  t.equal(line(coded('ETIMEDOUT'), { url: 'postgres://db', role: 'direct' }), 'the database at db:5432 (direct) did not answer in time: the connection timed out')
  t.equal(line(coded('28P01', 'password authentication failed for user "app"'), { url: 'postgres://r1:5433/x', role: 'replica 1' }),
    'the database at r1:5433 (replica 1) refused the login: password authentication failed for user "app"')
  t.equal(line(coded('3D000', 'database "store" does not exist')), 'the database at db.internal:6543 (primary) has no such database: database "store" does not exist; create it, or fix the URL')
  t.equal(line(coded('42P01', 'relation "api_keys" does not exist')), 'the database at db.internal:6543 (primary) is not migrated (relation "api_keys" does not exist): run storefront migrate')
  t.equal(line(coded('08P01', 'unsupported startup parameter: jit')),
    'the database at db.internal:6543 (primary) refused the connection: unsupported startup parameter: jit; behind a transaction pooler set DATABASE_POOLER=transaction')
  t.equal(line(coded('POOLER_MISMATCH', 'the database at db.internal:6543 (primary) is behind a transaction pooler: set DATABASE_POOLER=transaction')),
    'the database at db.internal:6543 (primary) is behind a transaction pooler: set DATABASE_POOLER=transaction', 'the service\'s own refusal is the whole line')
  t.equal(line(new Error('something else\nat line 2')), 'something else', 'not the database\'s: its own message, still no SQL')
  for (const text of [line(coded('ECONNREFUSED')), line(coded('42P01', 'relation "api_keys" does not exist'))]) {
    t.notMatch(text, /secret|select|\n/, 'no password, no SQL, one line')
  }
})

t.test('the embedded database is named by its folder', async (t) => {
  const where = { dataDir: './data' }
  t.equal(describeDatabaseFailure(new Error('the embedded database in ./data is in use by process 12: stop it first, or use DATABASE_URL'), where),
    'the embedded database in ./data is in use by process 12: stop it first, or use DATABASE_URL', 'the lock\'s message says what to do')
  t.equal(describeDatabaseFailure(coded('42P01', 'relation "x" does not exist'), where), 'the embedded database in ./data is not migrated: relation "x" does not exist')
  t.equal(describeDatabaseFailure(coded('EACCES', 'permission denied'), where), 'cannot open the embedded database in ./data: permission denied')
})

t.test('where the configuration puts the primary, and its address', async (t) => {
  t.same(primaryLocation({ DATA_DIR: './data' }), { dataDir: './data' })
  t.same(primaryLocation({ DATABASE_URL: 'postgres://h/x', DATA_DIR: './data' }), { url: 'postgres://h/x', role: 'primary' })
  t.same(sessionLocation({ DATABASE_URL: 'postgres://pooler/x', DATABASE_DIRECT_URL: 'postgres://primary/x', DATA_DIR: './data' }), { url: 'postgres://primary/x', role: 'direct' }, 'migrations: the direct URL')
  t.same(sessionLocation({ DATABASE_URL: 'postgres://h/x', DATA_DIR: './data' }), { url: 'postgres://h/x', role: 'primary' }, 'without one, the primary')
  t.equal(databaseAddress('postgres://u:p@h:6000/x'), 'h:6000')
  t.equal(databaseAddress('postgres://u:p@h/x'), 'h:5432')
  t.equal(databaseAddress('postgres://u:p@a,b:5433/x'), 'a,b:5433', 'several hosts')
  t.equal(databaseAddress('postgres://'), 'localhost:5432')
})

t.test('the driver\'s known socket fault', async (t) => {
  const fault = new TypeError('Cannot read properties of undefined')
  fault.stack = 'TypeError: Cannot read properties of undefined\n    at Socket.x (/app/node_modules/postgres/src/connection.js:10:5)'
  t.ok(isDriverSocketFault(fault))
  t.notOk(isDriverSocketFault(new TypeError('elsewhere')))
  t.notOk(isDriverSocketFault(new Error('not a TypeError')))
})
