// storefront settings set NAME VALUE | list: the shop's delivery fee and default country.
import type { Command } from 'commander'
import { changeSetting, readShopSettings, SETTING_NAMES, settingChange } from '../../services/settings.ts'
import { JSON_OPTION, missingArguments, print, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'

export default function defineSettings (settings: Command, { config }: CommandContext): void {
  const settingsSet = settings.command('set')
    .description('change a setting')
    .argument('<NAME>', SETTING_NAMES.join(' or '))
    .argument('<VALUE>', 'deliveryFee: an amount such as 4.99, added to orders with an address; defaultCountry: a code such as US, the region of phone numbers written without +, or none')
    .option(...JSON_OPTION)
    .action(async (name: string, value: string, options: Output) => {
      const change = settingChange(name, value)
      const stored = await withDatabase(config(), (database) => changeSetting(database, change))
      print(options, stored, `${change.name} = ${change.value ?? 'none'}`)
    })
  missingArguments.set(settingsSet, `settings set needs NAME and VALUE (${SETTING_NAMES.join(', ')})`)
  settings.command('list')
    .description('show the settings: deliveryFee, defaultCountry and maintenance')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const current = await withDatabase(config(), readShopSettings)
      print(options, current,
        `deliveryFee = ${current.deliveryFee.toFixed(2)}\ndefaultCountry = ${current.defaultCountry ?? 'none'}\nmaintenance = ${current.maintenance ? 'on' : 'off'}`)
    })
}
