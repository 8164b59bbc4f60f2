// storefront webhooks list | disable | enable: the operator's view of every key's endpoints.
import type { Command } from 'commander'
import { listAllEndpoints, setEndpointStatus } from '../../services/webhooks/endpoints.ts'
import { JSON_OPTION, missingArguments, print, UsageError, type CommandContext, type Output } from '../context.ts'
import { withDatabase } from '../database.ts'
import { requireId } from '../input.ts'

const ENDPOINT_ID = 'an endpoint id (a GUID, as webhooks list shows)'

export default function defineWebhooks (webhooks: Command, { config }: CommandContext): void {
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
        const id = requireId(value, `webhooks ${verb}`, ENDPOINT_ID)
        const endpoint = await withDatabase(config(), (database) => setEndpointStatus(database, id, status))
        if (endpoint === null) throw new UsageError(`no webhook endpoint has id ${id}`)
        print(options, { id: endpoint.id, status: endpoint.status }, `webhook endpoint ${endpoint.id} is now ${endpoint.status}`)
      })
    missingArguments.set(change, `webhooks ${verb} needs ${ENDPOINT_ID}`)
  }
}
