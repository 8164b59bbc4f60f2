// The `storefront` program: its options, its help, the command groups, and how a refused
// command line becomes one line naming the command and where its help is.
import { readFileSync } from 'node:fs'
import { Command, type CommanderError } from 'commander'
import { loadConfig, type Config } from '../config.ts'
import { addCatalogCommands } from './commands/catalog.ts'
import { addKeysCommands } from './commands/keys.ts'
import { addMaintenanceCommands } from './commands/maintenance.ts'
import { addMigrateCommand } from './commands/migrate.ts'
import { addOrdersCommands } from './commands/orders.ts'
import { addServeCommand } from './commands/serve.ts'
import { addSettingsCommands } from './commands/settings.ts'
import { addWebhooksCommands } from './commands/webhooks.ts'
import { CommandLineError, missingArguments, type CommandContext } from './context.ts'

/** package.json sits one level above cli/ in a checkout and two above dist/cli/ in the image. */
function packageVersion (): string {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string, version?: string }
      if (manifest.name === 'storefront-api' && manifest.version) return manifest.version
    } catch {}
  }
  return 'unknown'
}

function commandPath (command: Command): string {
  const names: string[] = []
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/**
 * The parser's refusals as one line naming the command and where its help is; a group
 * called without its subcommand shows that group's help instead.
 */
function refusal (command: Command, err: CommanderError): Error {
  // Help and --version were printed on stdout: nothing went wrong.
  if (err.exitCode === 0) return err
  const path = commandPath(command)
  const see = `(see ${path} --help)`
  if (err.code === 'commander.help') {
    // `storefront help NAME` with a NAME that is no command ends here too.
    const [first, asked] = command.args
    if (first === 'help' && asked !== undefined) {
      return new CommandLineError(`${path}: unknown command '${asked}' ${see}`)
    }
    return new CommandLineError(`${path}: ${command.parent ? 'a subcommand' : 'a command'} is needed\n\n${command.helpInformation().trimEnd()}`)
  }
  if (err.code === 'commander.missingArgument' && missingArguments.has(command)) {
    return new CommandLineError(`storefront: ${missingArguments.get(command)!} ${see}`)
  }
  if (err.code === 'commander.excessArguments') {
    return new CommandLineError(`${path}: unexpected argument ${command.args[command.registeredArguments.length]!} ${see}`)
  }
  const [what = err.message, ...more] = err.message.replace(/^error: /, '').split('\n')
  const suggestion = /\(Did you mean (.+)\?\)/.exec(more.join(' '))?.[1]
  return new CommandLineError(`${path}: ${what}${suggestion ? `, did you mean ${suggestion}?` : ''} ${see}`)
}

export function buildProgram (): Command {
  // Read once, when a command runs: --help and --version work whatever the environment holds.
  let loaded: Config | undefined
  const context: CommandContext = { config: () => (loaded ??= loadConfig()) }

  const program = new Command('storefront')
    .description('The storefront-api service and its operator commands.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show this help')
    .helpCommand('help [command]', 'show the help of a command')
    // Options of a command come after it, so a value such as -5 reaches the command itself.
    .enablePositionalOptions()
    .allowExcessArguments(false)
    .showSuggestionAfterError(true)
    .addHelpText('after', `
With --json a command prints one JSON document on stdout. Exit codes: 0 done, 2 bad
input or usage, 1 any other failure.
Every command has its own help: storefront keys --help, storefront keys create --help.
Configuration comes from the environment (DATABASE_URL, DATA_DIR, …); see the README.`)
  program.hook('preAction', () => { context.config() })

  for (const add of [addServeCommand, addMigrateCommand, addCatalogCommands, addKeysCommands, addMaintenanceCommands, addSettingsCommands, addOrdersCommands, addWebhooksCommands]) {
    add(program, context)
  }

  // Every refusal is thrown, not printed: main() prints one line and sets the exit code.
  const configure = (command: Command): void => {
    command
      .exitOverride((err) => { throw refusal(command, err) })
      .configureOutput({ writeErr: () => {}, outputError: () => {} })
    command.commands.forEach(configure)
  }
  configure(program)
  return program
}
