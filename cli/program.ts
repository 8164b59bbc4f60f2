// The `storefront` program: its options, its help, the command groups, and how a refused
// command line becomes one line naming the command and where its help is.
import { readFileSync } from 'node:fs'
import { Command, type CommanderError } from 'commander'
import type { Config } from '../config.ts'
import { CommandLineError, missingArguments, type CommandContext } from './context.ts'

type Definition = (command: Command, context: CommandContext) => void

/**
 * The commands, as the top-level help lists them. A group's module (its subcommands, and the
 * services and database code they call) is loaded only when the command line names it, so
 * `storefront --version` and `--help` load commander and nothing of the application, and
 * `keys list` nothing of the catalogue or the HTTP server. The two single commands are light
 * (their work is loaded in their actions) and always defined: the top-level help shows
 * their options.
 */
const COMMANDS: Array<{ name: string, description: string, define: () => Promise<{ default: Definition }>, always?: true }> = [
  { name: 'serve', description: 'start the API (npm start)', define: () => import('./commands/serve.ts'), always: true },
  { name: 'migrate', description: 'apply the database migrations', define: () => import('./commands/migrate.ts'), always: true },
  { name: 'catalog', description: 'load the catalogue: import FILE|-, demo', define: () => import('./commands/catalog.ts') },
  { name: 'keys', description: 'API keys: create, list, roll, revoke, deactivate, activate, set-rate-limit', define: () => import('./commands/keys.ts') },
  { name: 'maintenance', description: 'maintenance on|off|status: while on, creating an order answers 503 and reads keep working', define: () => import('./commands/maintenance.ts') },
  { name: 'settings', description: 'store settings: set NAME VALUE, list', define: () => import('./commands/settings.ts') },
  { name: 'orders', description: 'orders: set-status ORDER STATUS, purge-test', define: () => import('./commands/orders.ts') },
  { name: 'webhooks', description: 'webhook endpoints of every key: list, disable, enable', define: () => import('./commands/webhooks.ts') }
]

/** The command a command line names: its first word, or the one after `help`. */
function namedCommand (argv: string[]): string | undefined {
  const words = argv.filter((arg) => !arg.startsWith('-'))
  return words[0] === 'help' ? words[1] : words[0]
}

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

export async function buildProgram (argv: string[]): Promise<Command> {
  // Read once, before a command's action runs: --help and --version work whatever the
  // environment holds, and load no configuration code.
  let loaded: Config | undefined
  const context: CommandContext = {
    config: () => {
      if (loaded === undefined) throw new Error('the configuration is read before a command runs')
      return loaded
    }
  }

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
Configuration comes from the environment (DATABASE_URL, DATA_DIR, …); see docs/operators.md.`)
  program.hook('preAction', async () => {
    const { loadConfig } = await import('../config.ts')
    loaded ??= loadConfig()
  })

  const named = namedCommand(argv)
  for (const { name, description, define, always } of COMMANDS) {
    const command = program.command(name).description(description)
    if (always === true || name === named) (await define()).default(command, context)
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
