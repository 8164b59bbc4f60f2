// storefront maintenance on | off | status: while on, creating an order answers 503 and reads keep working.
import type { Command } from 'commander'
import { readShopSettings, setMaintenance } from '../../services/settings.ts'
import { JSON_OPTION, print, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'

// Every instance polls the settings (STATE_POLL_MS), well within this.
const IN_FORCE = 'in force on every instance within 5 seconds'

export default function defineMaintenance (maintenance: Command, { config }: CommandContext): void {
  for (const state of ['on', 'off'] as const) {
    maintenance.command(state)
      .description(`turn maintenance ${state} (${IN_FORCE})`)
      .option(...JSON_OPTION)
      .action(async (options: Output) => {
        const on = state === 'on'
        await withDatabase(config(), (database) => setMaintenance(database, on))
        print(options, { maintenance: on }, `maintenance ${state} (${IN_FORCE})`)
      })
  }
  maintenance.command('status')
    .description('show whether maintenance is on')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const { maintenance: on } = await withDatabase(config(), readShopSettings)
      print(options, { maintenance: on }, `maintenance is ${on ? 'on' : 'off'}`)
    })
}
