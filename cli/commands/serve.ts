// storefront serve: starts the API (npm start); on the embedded database, says how to call it.
import type { Command } from 'commander'
import type { Config } from '../../config.ts'
import type { Started } from '../../server.ts'
import type { CommandContext } from '../context.ts'

/** What a newcomer reads after `npm start`: where it serves, the demo key, how to try it. */
export function banner (config: Config, { address, demo }: Started): string | null {
  if (demo === null) return null
  const base = config.PUBLIC_BASE_URL ?? address.replace('0.0.0.0', '127.0.0.1')
  const lines = [`storefront-api is serving the embedded database in ${config.DATA_DIR} at ${base}`]
  if (demo.loadedDemo) lines.push('Loaded the demo catalogue.')
  if (demo.key) {
    lines.push(
      'Demo API key with every scope (shown only this once; stored only as a hash):',
      `  ${demo.key}`,
      'Try it:',
      `  curl -H "X-Api-Key: ${demo.key}" ${base}/external/v1/products`
    )
  } else {
    // This process holds the embedded database until it stops: a second process cannot open it.
    lines.push(
      'API keys exist already. To make another, stop this server first (Ctrl+C): it holds the',
      `embedded database in ${config.DATA_DIR}, so commands cannot open it while it runs. Then run:`,
      '  npx storefront keys create --name NAME --scopes products:list,products:find',
      'and start it again. With PostgreSQL (DATABASE_URL), operator commands run beside the server.'
    )
  }
  lines.push(`API reference: ${base}/docs`)
  return `\n${lines.join('\n')}\n\n`
}

export default function defineServe (serve: Command, { config }: CommandContext): void {
  serve.action(async () => {
    // Loaded here so the operator's commands do not pay for the HTTP stack.
    const { startServer } = await import('../../server.ts')
    const started = await startServer(config())
    const text = banner(config(), started)
    if (text !== null) process.stdout.write(text)
  })
}
