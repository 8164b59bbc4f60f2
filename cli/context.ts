// What every command of the `storefront` program shares: the configuration (read once, when
// a command runs), printing one JSON document or a line, the database opened for one
// command, and the errors that mean "fix the command" (exit code 2).
import type { Command } from 'commander'
import { OPERATOR_PGLITE_BUFFERS_MB, type Config } from '../config.ts'
import { connectionOptions, DatabaseSetupError, migrateDatabase, openDatabase, type Database } from '../db/client.ts'
import { classifyDatabaseFailure, describeDatabaseFailure, primaryLocation, sessionLocation } from '../lib/database-failure.ts'
import { isUuid } from '../schemas/common.ts'

/** A mistake in how the command was called or in its input: printed without a stack, exit code 2. */
export class UsageError extends Error {}

/** A command line the parser refused; the message is the whole line to print, already naming the command. */
export class CommandLineError extends UsageError {}

/** A database that cannot do the command's work; the message is the operator's one line. */
export class DatabaseFailureError extends Error {}

export interface Output { json: boolean }

export const JSON_OPTION = ['--json', 'print one JSON document on stdout'] as const

export interface CommandContext {
  /** The configuration, validated the first time a command asks for it. */
  config: () => Config
}

export function print (out: Output, document: unknown, text: string): void {
  process.stdout.write(out.json ? `${JSON.stringify(document, null, 2)}\n` : `${text}\n`)
}

/**
 * Opens the primary for one command (`session`: its direct session connection, as migrations
 * need) and closes it after; its failures are told in one line naming that database.
 */
export async function withDatabase<T> (config: Config, run: (database: Database) => Promise<T>, options: { session?: boolean } = {}): Promise<T> {
  const where = options.session === true ? sessionLocation(config) : primaryLocation(config)
  let database: Database
  try {
    // Operator work (a large import) may take longer than a request may; no command reads a replica.
    database = await openDatabase({ ...connectionOptions(config), replicaUrls: [], poolSize: 2, statementTimeoutMs: 0, pgliteBuffersMb: OPERATOR_PGLITE_BUFFERS_MB })
  } catch (err) {
    throw new DatabaseFailureError(describeDatabaseFailure(err, where))
  }
  try {
    // The embedded database is migrated by whoever opens it first; PostgreSQL by `storefront migrate`.
    if (database.kind === 'pglite') await migrateDatabase(database)
    return await run(database)
  } catch (err) {
    // A setting to add (exit 2); a database's failure becomes the operator's line; anything
    // else goes on as it is.
    if (err instanceof DatabaseSetupError && err.code === 'DIRECT_URL_REQUIRED') throw new UsageError(err.message)
    throw classifyDatabaseFailure(err) === null ? err : new DatabaseFailureError(describeDatabaseFailure(err, where))
  } finally {
    await database.close().catch(() => {})
  }
}

/** What each command says when its arguments are missing, in the words its checks use. */
export const missingArguments = new WeakMap<Command, string>()

export function requireId (value: string | undefined, what: string, kind = 'a key id (a GUID, as keys list shows)'): string {
  if (!isUuid(value)) {
    throw new UsageError(`${what} needs ${kind}${value === undefined ? '' : `, got ${value}`}`)
  }
  return value
}
