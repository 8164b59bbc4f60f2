// storefront migrate: applies the committed migrations (safe while instances start at once).
import type { Command } from 'commander'
import { JSON_OPTION, print, type CommandContext, type Output } from '../context.ts'

export default function defineMigrate (migrate: Command, { config }: CommandContext): void {
  migrate
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      // Loaded here: the top-level help, which lists this command and its options, needs neither.
      const [{ migrateDatabase }, { withDatabase }] = await Promise.all([import('../../db/client.ts'), import('../database.ts')])
      await withDatabase(config(), (database) => migrateDatabase(database, config().DATABASE_URL), { session: true })
      print(options, { migrated: true }, 'migrations applied')
    })
}
