// storefront keys create | list | roll | revoke | deactivate | activate | set-rate-limit.
import type { Command } from 'commander'
import { KEY_MODES, SCOPES } from '../../lib/api-key-secret.ts'
import { createKey, listKeys, newKey, rollKey, setKeyRateLimit, setKeyStatus } from '../../services/api-key-admin.ts'
import { JSON_OPTION, missingArguments, print, UsageError, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'
import { commaList, parseGrace, parseInstant, parseRateLimit, requireId } from '../input.ts'

const STATUS_CHANGES = [
  ['revoke', 'revoked', 'revoke a key for good'],
  ['deactivate', 'inactive', 'stop a key until it is activated again'],
  ['activate', 'active', 'let an inactive key work again']
] as const

export default function defineKeys (keys: Command, { config }: CommandContext): void {
  keys.command('create')
    .description('create a key and print it: the only time it is shown')
    .option('--name <name>', 'who the key is for (required)')
    .option('--scopes <list>', 'comma-separated scopes (required)')
    .option('--expires-at <iso>', 'when the key stops working: 2027-01-31 or 2027-01-31T12:00:00Z')
    .option('--rate-limit <n>', 'requests per window for this key, instead of RATE_LIMIT_MAX')
    .option('--mode <mode>', `${KEY_MODES.join(' or ')}: a test key (sk_test_…) reads the live catalogue, but its orders take no stock and only it sees them`, 'live')
    .option(...JSON_OPTION)
    .addHelpText('after', `\nScopes: ${SCOPES.join(', ')}`)
    .action(async (options: Output & { name?: string, scopes?: string, expiresAt?: string, rateLimit?: string, mode: string }) => {
      if (!options.name?.trim()) throw new UsageError('--name is required')
      if (options.scopes === undefined) throw new UsageError(`--scopes is required (comma-separated: ${SCOPES.join(', ')})`)
      const key = newKey({
        name: options.name,
        scopes: commaList(options.scopes),
        expiresAt: options.expiresAt === undefined ? null : parseInstant(options.expiresAt, '--expires-at'),
        rateLimit: options.rateLimit === undefined ? null : parseRateLimit(options.rateLimit),
        mode: options.mode
      })
      const { id, name, key: secret, scopes, expiresAt, mode } = await withDatabase(config(), (database) => createKey(database, key))
      print(options, { id, name, key: secret, scopes, expiresAt, mode }, `created ${mode} key ${id} (${name})\n${secret}\nKeep it secret: it is not shown again.`)
    })
  keys.command('list')
    .description('list the keys with their state: active, inactive, revoked or expired')
    .option(...JSON_OPTION)
    .action(async (options: Output) => {
      const list = await withDatabase(config(), listKeys)
      const text = list.length === 0
        ? 'no keys'
        : list.map((k) => `${k.id}  ${k.state.padEnd(8)}  ${k.mode}  ${k.name}  scopes=${k.scopes.join(',')}  expires=${k.expiresAt ?? 'never'}  lastUsed=${k.lastUsedAt ?? 'never'}  rateLimit=${k.rateLimit ?? 'default'}` +
          (k.previousKeyExpiresAt === null ? '' : `  previousKeyExpires=${k.previousKeyExpiresAt}`)).join('\n')
      print(options, list.map(({ id, name, state, mode, scopes, expiresAt, lastUsedAt, rateLimit, previousKeyExpiresAt, createdAt }) =>
        ({ id, name, state, mode, scopes, expiresAt, lastUsedAt, rateLimit, previousKeyExpiresAt, createdAt })), text)
    })
  const roll = keys.command('roll')
    .description('give a key a new secret, shown once; the old one works until the grace ends')
    .argument('<ID>', 'the key id, as keys list shows')
    .option('--grace <duration>', 'how long the old secret keeps working: 0 (ends now), 90s, 30m, 24h, up to 7d', '24h')
    .option(...JSON_OPTION)
    .addHelpText('after', '\nRolling again ends the older previous secret at once. revoke and deactivate stop both secrets.')
    .action(async (value: string, options: Output & { grace: string }) => {
      const id = requireId(value, 'keys roll')
      const graceMs = parseGrace(options.grace)
      const rolled = await withDatabase(config(), (database) => rollKey(database, id, graceMs))
      const previous = graceMs === 0
        ? 'The previous secret has stopped working (on every instance within 5 seconds).'
        : `The previous secret works until ${rolled.previousKeyExpiresAt} (grace ${options.grace}); then only this one does.`
      print(options, rolled, `rolled key ${rolled.id}: its new secret is\n${rolled.key}\nKeep it secret: it is not shown again. ${previous}`)
    })
  missingArguments.set(roll, 'keys roll needs a key id (a GUID, as keys list shows)')
  for (const [verb, status, description] of STATUS_CHANGES) {
    const change = keys.command(verb)
      .description(`${description} (in force on every instance within 5 seconds)`)
      .argument('<ID>', 'the key id, as keys list shows')
      .option(...JSON_OPTION)
      .action(async (value: string, options: Output) => {
        const id = requireId(value, `keys ${verb}`)
        const state = await withDatabase(config(), (database) => setKeyStatus(database, id, status))
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
      await withDatabase(config(), (database) => setKeyRateLimit(database, id, rateLimit))
      print(options, { id: id.toLowerCase(), rateLimit }, `key ${id} rate limit: ${rateLimit ?? 'the default'}`)
    })
  missingArguments.set(setRateLimit, 'keys set-rate-limit needs ID and a number, or default')
}
