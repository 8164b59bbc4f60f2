// storefront migrate: applies the committed migrations (safe while instances start at once).
import type { Command } from 'commander'
import { migrateDatabase, openDatabase } from '../../db/client.ts'
import { describeDatabaseFailure, primaryLocation } from '../../lib/database-failure.ts'
import { DatabaseFailureError, explainFailure, JSON_OPTION, print, type CommandContext, type Output } from '../context.ts'

export function addMigrateCommand (program: Command, { config }: CommandContext): void {
  program.command('migrate')
    .description('apply the database migrations')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const { DATABASE_URL: url, DATA_DIR: dataDir } = config()
      const where = primaryLocation(config())
      const database = await openDatabase({ url, dataDir, poolSize: 1, statementTimeoutMs: 0 })
        .catch((err: unknown) => { throw new DatabaseFailureError(describeDatabaseFailure(err, where)) })
      try {
        await migrateDatabase(database, url)
      } catch (err) {
        throw explainFailure(err, where)
      } finally {
        await database.close().catch(() => {})
      }
      print(options, { migrated: true }, 'migrations applied')
    })
}
