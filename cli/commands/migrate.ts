// storefront migrate: applies the committed migrations (safe while instances start at once).
import type { Command } from 'commander'
import { migrateDatabase } from '../../db/client.ts'
import { JSON_OPTION, print, withDatabase, type CommandContext, type Output } from '../context.ts'

export function addMigrateCommand (program: Command, { config }: CommandContext): void {
  program.command('migrate')
    .description('apply the database migrations')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      await withDatabase(config(), (database) => migrateDatabase(database, config().DATABASE_URL), { session: true })
      print(options, { migrated: true }, 'migrations applied')
    })
}
