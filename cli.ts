// The `storefront` command: serve, migrate, and the operator's catalogue, key, maintenance,
// settings and order commands (decisions §7). Every subcommand with --json prints one JSON
// document on stdout and nothing else there; problems go to stderr.
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { isSupportedCountry } from 'libphonenumber-js'
import { ConfigError, loadConfig, type Config } from './config.ts'
import { createApiKey, listApiKeys, setApiKeyRateLimit, setApiKeyStatus } from './db/api-keys.ts'
import { importCatalog } from './db/catalog.ts'
import { migrateDatabase, openDatabase, type Database } from './db/client.ts'
import { writeSetting } from './db/settings.ts'
import { isScope, SCOPES, type Scope } from './lib/api-key-secret.ts'
import { CatalogError, checkCatalog } from './lib/catalog-file.ts'
import { demoCatalog } from './services/demo-catalog.ts'
import { setOrderStatus } from './services/order-status.ts'
import { toCents, toDecimalText } from './lib/money.ts'
import { isUuid } from './schemas/common.ts'
import { ORDER_STATUSES, type OrderStatus } from './schemas/orders.ts'

/** A mistake in how the command was called or in its input: printed without a stack, exit code 2. */
class UsageError extends Error {}

const USAGE = `usage: storefront <command> [--json]

  serve                                   start the API (npm start)
  migrate                                 apply the database migrations
  catalog import FILE|-                   upsert the catalogue from a JSON file (- for stdin)
  catalog demo                            load the demo catalogue
  keys create --name N --scopes a,b [--expires-at ISO] [--rate-limit N]
  keys list
  keys revoke|deactivate|activate ID
  keys set-rate-limit ID N|default
  maintenance on|off
  settings set deliveryFee AMOUNT         added to orders with an address, e.g. 4.99
  settings set defaultCountry CODE|none   region of phone numbers written without +, e.g. US
  orders set-status ORDER STATUS          ORDER: number or id; STATUS: ${ORDER_STATUSES.join(', ')}

With --json a command prints one JSON document on stdout. Exit codes: 0 done, 2 bad
input or usage, 1 any other failure.
Scopes: ${SCOPES.join(', ')}
Configuration comes from the environment (DATABASE_URL, DATA_DIR, …); see the README.`

interface Output { json: boolean }

function print (out: Output, document: unknown, text: string): void {
  process.stdout.write(out.json ? `${JSON.stringify(document, null, 2)}\n` : `${text}\n`)
}

async function withDatabase<T> (config: Config, run: (database: Database) => Promise<T>): Promise<T> {
  // Operator work (a large import) may take longer than a request may.
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 2, statementTimeoutMs: 0 })
  try {
    // The embedded database is migrated by whoever opens it first; PostgreSQL by `storefront migrate`.
    if (database.kind === 'pglite') await migrateDatabase(database)
    return await run(database)
  } finally {
    await database.close()
  }
}

async function readCatalogSource (source: string): Promise<unknown> {
  let text: string
  if (source === '-') {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    text = Buffer.concat(chunks).toString('utf8')
  } else {
    try {
      text = await readFile(source, 'utf8')
    } catch (err) {
      throw new UsageError(`cannot read ${source}: ${(err as Error).message}`)
    }
  }
  try {
    // A byte-order mark is what some editors put first; it is not part of the JSON.
    return JSON.parse(text.replace(/^\uFEFF/, ''))
  } catch (err) {
    throw new CatalogError([`(root): not valid JSON: ${(err as Error).message}`])
  }
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

function expectArguments (rest: string[], count: number, command: string): void {
  if (rest.length > count) throw new UsageError(`${command}: unexpected argument ${rest[count]!}`)
}

// parseArgs reads `-1` as an option; here a negative number is a value, refused later with a
// message that says which value is wrong.
const NEGATIVE_NUMBER = /^-\d/
const MARK = '\u0000'
const unmark = (value: string) => (value.startsWith(MARK) ? value.slice(1) : value)

function parseCommandLine (argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv.map((arg) => (NEGATIVE_NUMBER.test(arg) ? MARK + arg : arg)),
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      name: { type: 'string' },
      scopes: { type: 'string' },
      'expires-at': { type: 'string' },
      'rate-limit': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  const strings = (['name', 'scopes', 'expires-at', 'rate-limit'] as const)
    .map((name) => [name, values[name] === undefined ? undefined : unmark(values[name])] as const)
  return { values: { ...values, ...Object.fromEntries(strings) } as typeof values, positionals: positionals.map(unmark) }
}

export async function run (argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(argv)
  const [command, sub, ...rest] = positionals
  if (values.help || command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (command === undefined) throw new UsageError(`a command is needed\n\n${USAGE}`)
  const out: Output = { json: values.json }
  const config = loadConfig()

  switch (`${command} ${sub ?? ''}`.trim()) {
    case 'serve': {
      expectArguments(sub === undefined ? [] : [sub, ...rest], 0, 'serve')
      // Loaded here so the operator's commands do not pay for the HTTP stack.
      const { serve } = await import('./server.ts')
      return serve(config)
    }

    case 'migrate': {
      expectArguments(sub === undefined ? [] : [sub, ...rest], 0, 'migrate')
      const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: 1, statementTimeoutMs: 0 })
      try {
        await migrateDatabase(database, config.DATABASE_URL)
      } finally {
        await database.close()
      }
      return print(out, { migrated: true }, 'migrations applied')
    }

    case 'catalog import': {
      const source = rest[0]
      if (source === undefined) throw new UsageError('catalog import needs a FILE, or - for stdin')
      expectArguments(rest, 1, 'catalog import')
      // Checked before the database is opened: a bad file touches nothing.
      const catalog = checkCatalog(await readCatalogSource(source))
      const summary = await withDatabase(config, (database) => importCatalog(database, catalog))
      return print(out, summary, `imported ${summary.products} products, ${summary.categories} categories, ${summary.brands} brands`)
    }

    case 'catalog demo': {
      expectArguments(rest, 0, 'catalog demo')
      const summary = await withDatabase(config, (database) => importCatalog(database, demoCatalog()))
      return print(out, summary, `loaded the demo catalogue: ${summary.products} products, ${summary.categories} categories, ${summary.brands} brands`)
    }

    case 'keys create': {
      expectArguments(rest, 0, 'keys create')
      if (!values.name?.trim()) throw new UsageError('--name is required')
      const input = {
        name: values.name.trim(),
        scopes: parseScopes(values.scopes),
        expiresAt: parseExpiry(values['expires-at']),
        rateLimit: values['rate-limit'] === undefined ? null : parseRateLimit(values['rate-limit'])
      }
      const created = await withDatabase(config, (database) => createApiKey(database.db, input))
      const { id, name, key, scopes, expiresAt } = created
      return print(out, { id, name, key, scopes, expiresAt }, `created key ${id} (${name})\n${key}\nKeep it secret: it is not shown again.`)
    }

    case 'keys list': {
      expectArguments(rest, 0, 'keys list')
      const keys = await withDatabase(config, (database) => listApiKeys(database.db))
      const text = keys.length === 0
        ? 'no keys'
        : keys.map((k) => `${k.id}  ${k.state.padEnd(8)}  ${k.name}  scopes=${k.scopes.join(',')}  expires=${k.expiresAt ?? 'never'}  lastUsed=${k.lastUsedAt ?? 'never'}  rateLimit=${k.rateLimit ?? 'default'}`).join('\n')
      return print(out, keys.map(({ id, name, state, scopes, expiresAt, lastUsedAt, rateLimit, createdAt }) =>
        ({ id, name, state, scopes, expiresAt, lastUsedAt, rateLimit, createdAt })), text)
    }

    case 'keys revoke':
    case 'keys deactivate':
    case 'keys activate': {
      const id = requireId(rest[0], `keys ${sub!}`)
      expectArguments(rest, 1, `keys ${sub!}`)
      const status = ({ revoke: 'revoked', deactivate: 'inactive', activate: 'active' } as const)[sub as 'revoke' | 'deactivate' | 'activate']
      const state = await withDatabase(config, async (database) => {
        const result = await setApiKeyStatus(database.db, id, status)
        if (result === 'not_found') throw new UsageError(`no key has id ${id}`)
        if (result === 'revoked') throw new UsageError(`key ${id} is revoked; a revoked key cannot be used again`)
        return (await listApiKeys(database.db)).find((k) => k.id === id.toLowerCase())?.state ?? status
      })
      const note = state === 'expired' ? ' but it has expired, so it still does not work' : ''
      return print(out, { id: id.toLowerCase(), state }, `key ${id} is now ${status}${note} (in force on every instance within 5 seconds)`)
    }

    case 'keys set-rate-limit': {
      const id = requireId(rest[0], 'keys set-rate-limit')
      if (rest[1] === undefined) throw new UsageError('keys set-rate-limit needs ID and a number, or default')
      expectArguments(rest, 2, 'keys set-rate-limit')
      const rateLimit = rest[1] === 'default' ? null : parseRateLimit(rest[1])
      const found = await withDatabase(config, (database) => setApiKeyRateLimit(database.db, id, rateLimit))
      if (!found) throw new UsageError(`no key has id ${id}`)
      return print(out, { id: id.toLowerCase(), rateLimit }, `key ${id} rate limit: ${rateLimit ?? 'the default'}`)
    }

    case 'maintenance on':
    case 'maintenance off': {
      expectArguments(rest, 0, `maintenance ${sub!}`)
      const maintenance = sub === 'on'
      await withDatabase(config, (database) => writeSetting(database.db, 'maintenance', maintenance))
      return print(out, { maintenance }, `maintenance ${sub!} (in force on every instance within 5 seconds)`)
    }

    case 'settings set': {
      const [name, value] = rest
      if (name === undefined || value === undefined) throw new UsageError('settings set needs NAME and VALUE (deliveryFee, defaultCountry)')
      expectArguments(rest, 2, 'settings set')
      if (name === 'deliveryFee') {
        // numeric(12,2): at most ten digits before the point.
        if (!/^\d{1,10}(\.\d{1,2})?$/.test(value)) throw new UsageError(`deliveryFee must be an amount of at least 0 with at most two decimals, such as 4.99, got ${value}`)
        const text = toDecimalText(toCents(value))
        await withDatabase(config, (database) => writeSetting(database.db, 'deliveryFee', text))
        return print(out, { deliveryFee: Number(text) }, `deliveryFee = ${text}`)
      }
      if (name === 'defaultCountry') {
        const clear = value.toLowerCase() === 'none'
        const country = value.toUpperCase()
        if (!clear && !(/^[A-Z]{2}$/.test(country) && isSupportedCountry(country))) {
          throw new UsageError(`defaultCountry must be an ISO 3166 alpha-2 code such as US or DE (or none), got ${value}`)
        }
        await withDatabase(config, (database) => writeSetting(database.db, 'defaultCountry', clear ? null : country))
        return print(out, { defaultCountry: clear ? null : country }, `defaultCountry = ${clear ? 'none' : country}`)
      }
      throw new UsageError(`unknown setting ${name}; settings are deliveryFee, defaultCountry`)
    }

    case 'orders set-status': {
      const [order, status] = rest
      if (order === undefined || status === undefined) throw new UsageError('orders set-status needs ORDER (number or id) and STATUS')
      expectArguments(rest, 2, 'orders set-status')
      if (!(ORDER_STATUSES as readonly string[]).includes(status)) throw new UsageError(`unknown status ${status}; statuses are ${ORDER_STATUSES.join(', ')}`)
      const change = await withDatabase(config, (database) => setOrderStatus(database.db, order, status as OrderStatus))
      if (!change.ok && change.reason === 'not_found') throw new UsageError(`no order has number or id ${order}`)
      if (!change.ok) {
        const allowed = change.allowed.length > 0 ? `it can go to ${change.allowed.join(' or ')}` : 'it cannot change any more'
        throw new UsageError(`order ${order} is ${change.from}: it cannot go to ${status}; ${allowed}`)
      }
      return print(out, change.order, `order ${change.order.orderNumber}: ${change.from} → ${change.order.status}`)
    }

    default:
      throw new UsageError(`unknown command: ${positionals.join(' ')}\n\n${USAGE}`)
  }
}

/** 2 for a bad call or bad input (the operator can fix the command), 1 for any other failure. */
export function exitCodeFor (err: unknown): 1 | 2 {
  const usage = err instanceof UsageError || err instanceof ConfigError || err instanceof CatalogError ||
    (err as { code?: string } | null)?.code?.startsWith('ERR_PARSE_ARGS') === true
  return usage ? 2 : 1
}

/** Runs the command line and sets the exit code. */
export async function main (argv: string[]): Promise<void> {
  try {
    await run(argv)
  } catch (err) {
    process.stderr.write(`storefront: ${(err as Error).message}\n`)
    process.exitCode = exitCodeFor(err)
  }
}
