// The `storefront` command: serve, migrate, and the operator's catalogue, key, maintenance,
// settings, order and webhook commands. Every subcommand with --json prints one JSON document on
// stdout and nothing else there; problems go to stderr.
import { readFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { Command, CommanderError } from 'commander'
import { isSupportedCountry } from 'libphonenumber-js'
import { ConfigError, loadConfig, OPERATOR_PGLITE_BUFFERS_MB, type Config } from './config.ts'
import { createApiKey, listApiKeys, setApiKeyRateLimit, setApiKeyStatus } from './db/api-keys.ts'
import { IMPORT_BATCH, importCatalog, type ImportSummary } from './db/catalog.ts'
import { connectionOptions, migrateDatabase, openDatabase, type Database } from './db/client.ts'
import { readSettings, writeSetting } from './db/settings.ts'
import { isScope, SCOPES, type Scope } from './lib/api-key-secret.ts'
import { CatalogChecker, CatalogError, readCatalog } from './lib/catalog-file.ts'
import { JsonStreamError, type JsonStreamEntry } from './lib/json-stream.ts'
import { demoCatalog } from './services/demo-catalog.ts'
import { setOrderStatus } from './services/order-status.ts'
import { listAllEndpoints, setEndpointStatus } from './services/webhooks/endpoints.ts'
import { toCents, toDecimalText } from './lib/money.ts'
import { isUuid } from './schemas/common.ts'
import { ORDER_STATUSES, type OrderStatus } from './schemas/orders.ts'

/** A mistake in how the command was called or in its input: printed without a stack, exit code 2. */
class UsageError extends Error {}

/** A command line the parser refused; the message is the whole line to print, already naming the command. */
class CommandLineError extends UsageError {}

interface Output { json: boolean }

function print (out: Output, document: unknown, text: string): void {
  process.stdout.write(out.json ? `${JSON.stringify(document, null, 2)}\n` : `${text}\n`)
}

async function withDatabase<T> (config: Config, run: (database: Database) => Promise<T>): Promise<T> {
  // Operator work (a large import) may take longer than a request may.
  const database = await openDatabase({ ...connectionOptions(config), replicaUrls: [], poolSize: 2, statementTimeoutMs: 0, pgliteBuffersMb: OPERATOR_PGLITE_BUFFERS_MB })
  try {
    // The embedded database is migrated by whoever opens it first; PostgreSQL by `storefront migrate`.
    if (database.kind === 'pglite') await migrateDatabase(database)
    return await run(database)
  } finally {
    await database.close()
  }
}

/** The bytes of a catalogue file, or of stdin for `-`; a file that cannot be read is the operator's to fix. */
async function * catalogBytes (source: string): AsyncGenerator<Buffer> {
  if (source === '-') {
    for await (const chunk of process.stdin) yield chunk as Buffer
    return
  }
  let handle
  try {
    handle = await open(source, 'r')
    if ((await handle.stat()).isDirectory()) throw new Error('it is a directory')
  } catch (err) {
    await handle?.close()
    throw new UsageError(`cannot read ${source}: ${(err as Error).message}`)
  }
  try {
    for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20 })) yield chunk as Buffer
  } catch (err) {
    throw new UsageError(`cannot read ${source}: ${(err as Error).message}`)
  } finally {
    await handle.close()
  }
}

/**
 * The entries of a catalogue file, read as a stream. A file of up to one batch is read and
 * checked whole first, so a small bad file is refused before the database is opened (the
 * embedded one may be in use by a server); a larger one is checked as it is imported, and a
 * problem anywhere rolls the whole import back.
 */
async function readCatalogSource (source: string): Promise<AsyncIterable<JsonStreamEntry>> {
  const entries = readCatalog(catalogBytes(source))
  const head: JsonStreamEntry[] = []
  const checker = new CatalogChecker()
  try {
    while (head.length < IMPORT_BATCH) {
      const next = await entries.next()
      if (next.done) {
        for (const entry of head) checker.check(entry)
        if (!checker.ok) throw checker.error()
        return (async function * () { yield * head })()
      }
      head.push(next.value)
    }
  } catch (err) {
    if (!(err instanceof JsonStreamError)) throw err
    checker.unreadable(err)
    throw checker.error()
  }
  return (async function * () {
    yield * head
    yield * entries
  })()
}

/** `12,345 products read, 4,100 a second` on one line of a terminal, rewritten as it goes. */
function progressLine (): { update: (products: number) => void, clear: () => void } {
  const started = performance.now()
  const format = new Intl.NumberFormat('en')
  let shown = false
  return {
    update: (products) => {
      const seconds = (performance.now() - started) / 1000
      process.stderr.write(`\r\x1b[Kimporting: ${format.format(products)} products read, ${format.format(Math.round(products / Math.max(seconds, 0.001)))} a second`)
      shown = true
    },
    clear: () => { if (shown) process.stderr.write('\r\x1b[K') }
  }
}

function summaryLine (s: ImportSummary): string {
  return `imported ${s.products} products: ${s.created} created, ${s.updated} updated, ${s.unchanged} unchanged, ${s.removed} removed ` +
    `(${s.categories} categories, ${s.brands} brands)`
}

function parseScopes (value: string | undefined): Scope[] {
  if (value === undefined) throw new UsageError(`--scopes is required (comma-separated: ${SCOPES.join(', ')})`)
  const scopes = [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))]
  if (scopes.length === 0) throw new UsageError(`--scopes needs at least one scope: ${SCOPES.join(', ')}`)
  const unknown = scopes.filter((s) => !isScope(s))
  if (unknown.length > 0) throw new UsageError(`unknown scope ${unknown.join(', ')}; scopes are ${SCOPES.join(', ')}`)
  return scopes as Scope[]
}

function parseRateLimit (value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1_000_000_000) {
    throw new UsageError(`the rate limit must be a whole number of requests per window from 1 to 1000000000, got ${value}`)
  }
  return Number(value)
}

// A date (midnight UTC) or a date-time with Z or an offset: a time without a zone would depend
// on the machine's time zone.
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i

function parseExpiry (value: string | undefined, now = new Date()): Date | null {
  if (value === undefined) return null
  const match = ISO_TIMESTAMP.exec(value)
  const date = new Date(match && !value.includes('T') ? `${value}T00:00:00Z` : value)
  // Date accepts 2026-02-30 as 2026-03-02: the calendar day must survive the round trip.
  const calendarDay = match && new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))).toISOString().slice(0, 10)
  if (!match || Number.isNaN(date.getTime()) || calendarDay !== `${match[1]}-${match[2]}-${match[3]}`) {
    throw new UsageError(`--expires-at must be an ISO 8601 date or date-time with a UTC offset (2027-01-31 or 2027-01-31T12:00:00Z), got ${value}`)
  }
  if (date <= now) throw new UsageError(`--expires-at must be in the future, got ${value}`)
  return date
}

function requireId (value: string | undefined, what: string): string {
  if (!isUuid(value)) throw new UsageError(`${what} needs a key id (a GUID, as keys list shows)${value === undefined ? '' : `, got ${value}`}`)
  return value
}

/** package.json sits beside cli.ts in a checkout and one level above dist/cli.js in the image. */
function packageVersion (): string {
  for (const candidate of ['./package.json', '../package.json']) {
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

/** What each command says when its arguments are missing, in the words its checks use. */
const missingArguments = new WeakMap<Command, string>()

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

const JSON_OPTION = ['--json', 'print one JSON document on stdout'] as const

function buildProgram (): Command {
  // Read once, when a command runs: --help and --version work whatever the environment holds.
  let loaded: Config | undefined
  const config = () => (loaded ??= loadConfig())

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
  program.hook('preAction', () => { config() })

  program.command('serve')
    .description('start the API (npm start)')
    .action(async () => {
      // Loaded here so the operator's commands do not pay for the HTTP stack.
      const { serve } = await import('./server.ts')
      await serve(config())
    })

  program.command('migrate')
    .description('apply the database migrations')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const database = await openDatabase({ ...connectionOptions(config()), replicaUrls: [], poolSize: 1, statementTimeoutMs: 0 })
      try {
        await migrateDatabase(database, config().DATABASE_URL)
      } catch (err) {
        // Behind a transaction pooler without a session URL: a setting to add, exit 2.
        if ((err as { code?: unknown }).code === 'DIRECT_URL_REQUIRED') throw new UsageError((err as Error).message)
        throw err
      } finally {
        await database.close()
      }
      print(options, { migrated: true }, 'migrations applied')
    })

  const catalog = program.command('catalog').description('load the catalogue: import FILE|-, demo')
  const catalogImport = catalog.command('import')
    .description('upsert the catalogue from a JSON file by id, in one transaction; a bad file changes nothing')
    .argument('<FILE>', 'the catalogue file, or - for stdin')
    .option('--replace', 'also delete the products the file does not list: the catalogue becomes exactly the file')
    .option(...JSON_OPTION)
    .addHelpText('after', `
The file is read as a stream and written in batches inside one transaction: any size, in
bounded memory. A product imported as it already is stays untouched (its updatedAt too).
While stderr is a terminal a progress line shows the products read and the rate. At the
end one line says how many products were created, updated, unchanged and removed; with
--json, the same as { categories, brands, products, created, updated, unchanged, removed }.
Products removed by --replace take their variants, combinations and discounts with them;
orders keep their items. The file's format is in the README (examples/catalog.json).`)
    .action(async (source: string, options: Output & { replace?: boolean }) => {
      const entries = await readCatalogSource(source)
      const progress = process.stderr.isTTY ? progressLine() : undefined
      try {
        const summary = await withDatabase(config(), (database) =>
          importCatalog(database, entries, { replace: options.replace === true, onProgress: progress?.update }))
        progress?.clear()
        print(options, summary, summaryLine(summary))
      } catch (err) {
        progress?.clear()
        throw err
      }
    })
  missingArguments.set(catalogImport, 'catalog import needs a FILE, or - for stdin')
  catalog.command('demo')
    .description('load the demo catalogue')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const summary = await withDatabase(config(), (database) => importCatalog(database, demoCatalog()))
      print(options, summary, `loaded the demo catalogue: ${summaryLine(summary).replace(/^imported /, '')}`)
    })

  const keys = program.command('keys').description('API keys: create, list, revoke, deactivate, activate, set-rate-limit')
  keys.command('create')
    .description('create a key and print it: the only time it is shown')
    .option('--name <name>', 'who the key is for (required)')
    .option('--scopes <list>', 'comma-separated scopes (required)')
    .option('--expires-at <iso>', 'when the key stops working: 2027-01-31 or 2027-01-31T12:00:00Z')
    .option('--rate-limit <n>', 'requests per window for this key, instead of RATE_LIMIT_MAX')
    .option(...JSON_OPTION)
    .addHelpText('after', `\nScopes: ${SCOPES.join(', ')}`)
    .action(async (options: Output & { name?: string, scopes?: string, expiresAt?: string, rateLimit?: string }) => {
      if (!options.name?.trim()) throw new UsageError('--name is required')
      const input = {
        name: options.name.trim(),
        scopes: parseScopes(options.scopes),
        expiresAt: parseExpiry(options.expiresAt),
        rateLimit: options.rateLimit === undefined ? null : parseRateLimit(options.rateLimit)
      }
      const created = await withDatabase(config(), (database) => createApiKey(database.db, input))
      const { id, name, key, scopes, expiresAt } = created
      print(options, { id, name, key, scopes, expiresAt }, `created key ${id} (${name})\n${key}\nKeep it secret: it is not shown again.`)
    })
  keys.command('list')
    .description('list the keys with their state: active, inactive, revoked or expired')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const list = await withDatabase(config(), (database) => listApiKeys(database.db))
      const text = list.length === 0
        ? 'no keys'
        : list.map((k) => `${k.id}  ${k.state.padEnd(8)}  ${k.name}  scopes=${k.scopes.join(',')}  expires=${k.expiresAt ?? 'never'}  lastUsed=${k.lastUsedAt ?? 'never'}  rateLimit=${k.rateLimit ?? 'default'}`).join('\n')
      print(options, list.map(({ id, name, state, scopes, expiresAt, lastUsedAt, rateLimit, createdAt }) =>
        ({ id, name, state, scopes, expiresAt, lastUsedAt, rateLimit, createdAt })), text)
    })
  const changes = [
    ['revoke', 'revoked', 'revoke a key for good'],
    ['deactivate', 'inactive', 'stop a key until it is activated again'],
    ['activate', 'active', 'let an inactive key work again']
  ] as const
  for (const [verb, status, description] of changes) {
    const change = keys.command(verb)
      .description(`${description} (in force on every instance within 5 seconds)`)
      .argument('<ID>', 'the key id, as keys list shows')
      .option(...JSON_OPTION)
      .action(async (value: string, options: Output) => {
        const id = requireId(value, `keys ${verb}`)
        const state = await withDatabase(config(), async (database) => {
          const result = await setApiKeyStatus(database.db, id, status)
          if (result === 'not_found') throw new UsageError(`no key has id ${id}`)
          if (result === 'revoked') throw new UsageError(`key ${id} is revoked; a revoked key cannot be used again`)
          return (await listApiKeys(database.db)).find((k) => k.id === id.toLowerCase())?.state ?? status
        })
        const note = state === 'expired' ? ' but it has expired, so it still does not work' : ''
        print(options, { id: id.toLowerCase(), state }, `key ${id} is now ${status}${note} (in force on every instance within 5 seconds)`)
      })
    missingArguments.set(change, `keys ${verb} needs a key id (a GUID, as keys list shows)`)
  }
  const setRateLimit = keys.command('set-rate-limit')
    .description('change the rate-limit override of a key')
    .argument('<ID>', 'the key id, as keys list shows')
    .argument('<N|default>', 'requests per window, or default for RATE_LIMIT_MAX')
    .option(...JSON_OPTION)
    .action(async (value: string, limit: string, options: Output) => {
      const id = requireId(value, 'keys set-rate-limit')
      const rateLimit = limit === 'default' ? null : parseRateLimit(limit)
      const found = await withDatabase(config(), (database) => setApiKeyRateLimit(database.db, id, rateLimit))
      if (!found) throw new UsageError(`no key has id ${id}`)
      print(options, { id: id.toLowerCase(), rateLimit }, `key ${id} rate limit: ${rateLimit ?? 'the default'}`)
    })
  missingArguments.set(setRateLimit, 'keys set-rate-limit needs ID and a number, or default')

  const maintenance = program.command('maintenance')
    .description('maintenance on|off|status: while on, creating an order answers 503 and reads keep working')
  for (const state of ['on', 'off'] as const) {
    maintenance.command(state)
      .description(`turn maintenance ${state} (in force on every instance within 5 seconds)`)
      .option(...JSON_OPTION)
      .action(async (options: Output) => {
        const on = state === 'on'
        await withDatabase(config(), (database) => writeSetting(database.db, 'maintenance', on))
        print(options, { maintenance: on }, `maintenance ${state} (in force on every instance within 5 seconds)`)
      })
  }
  maintenance.command('status')
    .description('show whether maintenance is on')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const { maintenance: on } = await withDatabase(config(), (database) => readSettings(database.db))
      print(options, { maintenance: on }, `maintenance is ${on ? 'on' : 'off'}`)
    })

  const settings = program.command('settings').description('store settings: set NAME VALUE, list')
  const settingsSet = settings.command('set')
    .description('change a setting')
    .argument('<NAME>', 'deliveryFee or defaultCountry')
    .argument('<VALUE>', 'deliveryFee: an amount such as 4.99, added to orders with an address; defaultCountry: a code such as US, the region of phone numbers written without +, or none')
    .option(...JSON_OPTION)
    .action(async (name: string, value: string, options: Output) => {
      if (name === 'deliveryFee') {
        // numeric(12,2): at most ten digits before the point.
        if (!/^\d{1,10}(\.\d{1,2})?$/.test(value)) throw new UsageError(`deliveryFee must be an amount of at least 0 with at most two decimals, such as 4.99, got ${value}`)
        const text = toDecimalText(toCents(value))
        await withDatabase(config(), (database) => writeSetting(database.db, 'deliveryFee', text))
        return print(options, { deliveryFee: Number(text) }, `deliveryFee = ${text}`)
      }
      if (name === 'defaultCountry') {
        const clear = value.toLowerCase() === 'none'
        const country = value.toUpperCase()
        if (!clear && !(/^[A-Z]{2}$/.test(country) && isSupportedCountry(country))) {
          throw new UsageError(`defaultCountry must be an ISO 3166 alpha-2 code such as US or DE (or none), got ${value}`)
        }
        await withDatabase(config(), (database) => writeSetting(database.db, 'defaultCountry', clear ? null : country))
        return print(options, { defaultCountry: clear ? null : country }, `defaultCountry = ${clear ? 'none' : country}`)
      }
      throw new UsageError(`unknown setting ${name}; settings are deliveryFee, defaultCountry`)
    })
  missingArguments.set(settingsSet, 'settings set needs NAME and VALUE (deliveryFee, defaultCountry)')
  settings.command('list')
    .description('show the settings: deliveryFee, defaultCountry and maintenance')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const current = await withDatabase(config(), (database) => readSettings(database.db))
      // Stored as decimal text so no float rounding creeps in; printed as the amount it is.
      const deliveryFee = toDecimalText(toCents(String(current.deliveryFee)))
      print(options,
        { deliveryFee: Number(deliveryFee), defaultCountry: current.defaultCountry, maintenance: current.maintenance },
        `deliveryFee = ${deliveryFee}\ndefaultCountry = ${current.defaultCountry ?? 'none'}\nmaintenance = ${current.maintenance ? 'on' : 'off'}`)
    })

  const orders = program.command('orders').description('orders: set-status ORDER STATUS')
  const setStatus = orders.command('set-status')
    .description('change the status of an order; only the allowed transitions are made')
    .argument('<ORDER>', 'the order number or id')
    .argument('<STATUS>', ORDER_STATUSES.join(', '))
    .option(...JSON_OPTION)
    .action(async (order: string, status: string, options: Output) => {
      if (!(ORDER_STATUSES as readonly string[]).includes(status)) throw new UsageError(`unknown status ${status}; statuses are ${ORDER_STATUSES.join(', ')}`)
      const change = await withDatabase(config(), (database) => setOrderStatus(database.db, order, status as OrderStatus))
      if (!change.ok && change.reason === 'not_found') throw new UsageError(`no order has number or id ${order}`)
      if (!change.ok) {
        const allowed = change.allowed.length > 0 ? `it can go to ${change.allowed.join(' or ')}` : 'it cannot change any more'
        throw new UsageError(`order ${order} is ${change.from}: it cannot go to ${status}; ${allowed}`)
      }
      print(options, change.order, `order ${change.order.orderNumber}: ${change.from} → ${change.order.status}`)
    })
  missingArguments.set(setStatus, 'orders set-status needs ORDER (number or id) and STATUS')

  const webhooks = program.command('webhooks').description('webhook endpoints of every key: list, disable, enable')
  webhooks.command('list')
    .description('list the webhook endpoints (never their secrets), oldest first')
    .option('--key <ID>', 'only the endpoints of this key')
    .option(...JSON_OPTION)
    .action(async (options: Output & { key?: string }) => {
      const keyId = options.key === undefined ? null : requireId(options.key, 'webhooks list --key')
      const list = await withDatabase(config(), (database) => listAllEndpoints(database, keyId))
      const text = list.length === 0
        ? 'no webhook endpoints'
        : list.map((e) => `${e.id}  ${e.status.padEnd(8)}  key=${e.apiKeyId}  events=${e.events.join(',')}  ${e.url}${e.disabledReason === null ? '' : `  (${e.disabledReason})`}`).join('\n')
      print(options, list.map(({ id, apiKeyId, url, events, description, status, disabledReason, createdAt }) =>
        ({ id, apiKeyId, url, events, description, status, disabledReason, createdAt })), text)
    })
  for (const [verb, status, description] of [
    ['disable', 'disabled', 'stop deliveries to an endpoint (its key sees disabledReason "Disabled by the operator")'],
    ['enable', 'enabled', 'let a disabled endpoint receive deliveries again (also one disabled for failing)']
  ] as const) {
    const change = webhooks.command(verb)
      .description(description)
      .argument('<ID>', 'the endpoint id, as webhooks list shows')
      .option(...JSON_OPTION)
      .action(async (value: string, options: Output) => {
        if (!isUuid(value)) throw new UsageError(`webhooks ${verb} needs an endpoint id (a GUID, as webhooks list shows), got ${value}`)
        const endpoint = await withDatabase(config(), (database) => setEndpointStatus(database, value, status))
        if (endpoint === null) throw new UsageError(`no webhook endpoint has id ${value}`)
        print(options, { id: endpoint.id, status: endpoint.status }, `webhook endpoint ${endpoint.id} is now ${endpoint.status}`)
      })
    missingArguments.set(change, `webhooks ${verb} needs an endpoint id (a GUID, as webhooks list shows)`)
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

export async function run (argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' })
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) return
    throw err
  }
}

/** 2 for a bad call or bad input (the operator can fix the command), 1 for any other failure. */
export function exitCodeFor (err: unknown): 1 | 2 {
  return err instanceof UsageError || err instanceof ConfigError || err instanceof CatalogError ? 2 : 1
}

/** Runs the command line and sets the exit code. */
export async function main (argv: string[]): Promise<void> {
  try {
    await run(argv)
  } catch (err) {
    const message = (err as Error).message
    process.stderr.write(err instanceof CommandLineError ? `${message}\n` : `storefront: ${message}\n`)
    process.exitCode = exitCodeFor(err)
  }
}
