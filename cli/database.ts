// The database opened for one command, and closed after it.
import { OPERATOR_PGLITE_BUFFERS_MB, type Config } from '../config.ts'
import { connectionOptions, DatabaseSetupError, migrateDatabase, openDatabase, type Database } from '../db/client.ts'
import { classifyDatabaseFailure, describeDatabaseFailure, primaryLocation, sessionLocation } from '../lib/database-failure.ts'
import { DatabaseFailureError, UsageError } from './context.ts'

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
