// What a database failure means, in one place: the HTTP error handler answers 503 for the
// failures that say the database cannot do work right now, and every operator command (and
// `serve`) prints one line naming the database and the cause, never SQL. Drizzle wraps a
// failed query in an error whose message is the SQL text; the driver's or the socket's
// error underneath, found by walking the `cause` chain, says what actually happened.

export type DatabaseFailureKind =
  | 'unreachable'
  | 'authentication'
  | 'missing_database'
  | 'not_migrated'
  | 'timeout'
  | 'pooler_refusal'

export interface DatabaseFailure {
  kind: DatabaseFailureKind
  /** The cause in the operator's words, without SQL. */
  reason: string
}

interface ErrorLike { code?: unknown, message?: unknown, cause?: unknown, errors?: unknown }

/**
 * Every error along a cause chain, outermost first. An AggregateError (a host name with
 * several addresses, each refused) counts as its first error.
 */
export function causeChain (err: unknown): ErrorLike[] {
  const chain: ErrorLike[] = []
  for (let e: unknown = err; e instanceof Object && chain.length < 10; e = (e as ErrorLike).cause) {
    chain.push(e as ErrorLike)
    const inner = (e as ErrorLike).errors
    if ((e as ErrorLike).cause === undefined && Array.isArray(inner) && inner[0] instanceof Object) e = { cause: inner[0] }
  }
  return chain
}

/** The `code`s along an error's cause chain, outermost first. */
export function errorCodes (err: unknown): string[] {
  return causeChain(err).flatMap((e) => (typeof e.code === 'string' ? [e.code] : []))
}

/** The innermost error of a cause chain that carries a code (the driver's or the socket's), else the innermost. */
export function rootCause (err: unknown): ErrorLike {
  const chain = causeChain(err)
  const coded = chain.filter((e) => typeof e.code === 'string')
  return coded.at(-1) ?? chain.at(-1) ?? {}
}

/** The first line of an error's message; never Drizzle's "Failed query: <SQL>". */
export function firstLine (value: unknown): string {
  const line = String(value ?? 'unknown error').split('\n')[0]!.trim()
  return /^Failed query:/.test(line) ? 'a query failed' : line
}

// Socket and driver codes, with the words an operator reads.
const SOCKET_FAILURES: Record<string, [DatabaseFailureKind, string]> = {
  ECONNREFUSED: ['unreachable', 'connection refused'],
  ENOTFOUND: ['unreachable', 'the host name could not be resolved'],
  EAI_AGAIN: ['unreachable', 'the host name could not be resolved'],
  EHOSTUNREACH: ['unreachable', 'the host is unreachable'],
  ENETUNREACH: ['unreachable', 'the network is unreachable'],
  ECONNRESET: ['unreachable', 'the connection was reset'],
  EPIPE: ['unreachable', 'the connection was closed'],
  CONNECTION_CLOSED: ['unreachable', 'the connection was closed'],
  CONNECTION_ENDED: ['unreachable', 'the connection was closed'],
  CONNECTION_DESTROYED: ['unreachable', 'the connection was closed'],
  ETIMEDOUT: ['timeout', 'the connection timed out'],
  CONNECT_TIMEOUT: ['timeout', 'the connection timed out'],
  SASL_SIGNATURE_MISMATCH: ['authentication', 'authentication failed'],
  AUTH_TYPE_NOT_IMPLEMENTED: ['authentication', 'authentication failed: the server asks for an unsupported method']
}

// What a transaction pooler answers for what it cannot carry: start-up parameters it does not
// know (PgBouncer before 1.21 refuses jit, statement_timeout…) and named prepared statements
// that live on another server connection.
const POOLER_REFUSALS = [/unsupported startup parameter/i, /prepared statement "[^"]*" (does not|already) exist/i]

/**
 * What a failure means for the database, or null when it is not the database's (a bug, bad
 * input): unreachable, authentication, missing database, not migrated, timeout, or refused
 * by a pooler.
 */
export function classifyDatabaseFailure (err: unknown): DatabaseFailure | null {
  const chain = causeChain(err)
  for (const e of chain) {
    const code = typeof e.code === 'string' ? e.code : ''
    const message = firstLine(e.message)
    // Raised by the service itself with the whole line for the operator.
    if (code === 'POOLER_MISMATCH') return { kind: 'pooler_refusal', reason: message }
    if (POOLER_REFUSALS.some((pattern) => pattern.test(message))) {
      return { kind: 'pooler_refusal', reason: `${message}; behind a transaction pooler set DATABASE_POOLER=transaction` }
    }
    const socket = SOCKET_FAILURES[code]
    if (socket) return { kind: socket[0], reason: socket[1] }
    // SQLSTATE classes: 28 invalid authorization, 3D000 no such database, 42P01 no such
    // table (migrations not applied), 57014 a statement cancelled by its timeout, 08 the
    // connection, 57P01–57P03 the server shutting down or starting, 53300 too many connections.
    if (code.startsWith('28')) return { kind: 'authentication', reason: message }
    if (code === '3D000') return { kind: 'missing_database', reason: message }
    if (code === '42P01') return { kind: 'not_migrated', reason: message }
    if (code === '57014') return { kind: 'timeout', reason: message }
    if (code.startsWith('08') || /^57P0[123]$/.test(code) || code === '53300') return { kind: 'unreachable', reason: message }
  }
  return null
}

/** The failures an API request answers 503 `service_unavailable` for: retrying later may work. */
export function isDatabaseUnavailable (err: unknown): boolean {
  const failure = classifyDatabaseFailure(err)
  return failure !== null && failure.kind !== 'not_migrated'
}

/** host:port of a postgres:// URL, without the user or password. */
export function databaseAddress (url: string): string {
  try {
    const { hostname, port } = new URL(url)
    if (hostname) return `${hostname}:${port || '5432'}`
  } catch {}
  // Several hosts (a,b:5433) are no valid URL: the part between @ and the path names them.
  return /^[^:]+:\/\/(?:[^@/]*@)?([^/?]*)/.exec(url)?.[1] || 'localhost:5432'
}

/** Which database a connection goes to: the primary, its direct (session) URL, or a replica. */
export type DatabaseRole = 'primary' | 'direct' | `replica ${number}`

export type DatabaseLocation =
  | { url: string, role: DatabaseRole }
  | { dataDir: string }

/** Where the configuration puts the primary database: its URL, else the embedded one's folder. */
export function primaryLocation (config: { DATABASE_URL?: string | undefined, DATA_DIR: string }): DatabaseLocation {
  return config.DATABASE_URL === undefined ? { dataDir: config.DATA_DIR } : { url: config.DATABASE_URL, role: 'primary' }
}

/** Where migrations run: the primary's direct session URL when one is set, else the primary. */
export function sessionLocation (config: { DATABASE_URL?: string | undefined, DATABASE_DIRECT_URL?: string | undefined, DATA_DIR: string }): DatabaseLocation {
  return config.DATABASE_DIRECT_URL === undefined ? primaryLocation(config) : { url: config.DATABASE_DIRECT_URL, role: 'direct' }
}

/**
 * One line for the operator: which database (host:port and role, or the embedded one's
 * folder) and what went wrong. A failure that is not the database's keeps its own message.
 */
export function describeDatabaseFailure (err: unknown, where: DatabaseLocation): string {
  const failure = classifyDatabaseFailure(err)
  if ('dataDir' in where) {
    const message = firstLine(rootCause(err).message)
    // The lock file's message already says what to do.
    if (/^the embedded database in .* is in use/.test(message)) return message
    if (failure?.kind === 'not_migrated') return `the embedded database in ${where.dataDir} is not migrated: ${failure.reason}`
    return `cannot open the embedded database in ${where.dataDir}: ${message}`
  }
  const at = `${databaseAddress(where.url)} (${where.role})`
  if (failure === null) return firstLine(rootCause(err).message)
  // The service's own refusal already is the whole line.
  if (errorCodes(err).includes('POOLER_MISMATCH')) return failure.reason
  switch (failure.kind) {
    case 'unreachable': return `cannot reach the database at ${at}: ${failure.reason}`
    case 'timeout': return `the database at ${at} did not answer in time: ${failure.reason}`
    case 'authentication': return `the database at ${at} refused the login: ${failure.reason}`
    case 'missing_database': return `the database at ${at} has no such database: ${failure.reason}; create it, or fix the URL`
    case 'not_migrated': return `the database at ${at} is not migrated (${failure.reason}): run storefront migrate`
    case 'pooler_refusal': return `the database at ${at} refused the connection: ${failure.reason}`
  }
}

/**
 * The known postgres.js socket fault (porsager/postgres#1154): a TypeError thrown from the
 * driver's connection handling while the database drops connections; the pool recovers.
 */
export function isDriverSocketFault (err: unknown): boolean {
  return err instanceof TypeError && /[\\/]postgres[\\/](src|cjs[\\/]src)[\\/]connection\.js/.test(err.stack ?? '')
}
