// The service's configuration: one TypeBox schema, read from the environment once at start,
// shared by the server and the `storefront` command.
import envSchema from 'env-schema'
import { Type, type Static } from 'typebox'

export const ConfigSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({
    pattern: '^postgres(ql)?://',
    description: 'PostgreSQL URL; unset means the embedded PGlite database in DATA_DIR'
  })),
  DATA_DIR: Type.String({ default: './data', minLength: 1, description: 'Where the embedded database lives' }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$', description: 'Absolute base URL used in Location headers' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  RATE_LIMIT_MAX: Type.Integer({ default: 600, minimum: 1, description: 'Requests per window per API key' }),
  RATE_LIMIT_WINDOW: Type.Integer({ default: 60, minimum: 1, description: 'Rate-limit window in seconds' }),
  LOG_LEVEL: Type.Unsafe<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>({ type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
  TRUST_PROXY: Type.String({
    default: 'false',
    pattern: '^(true|false|\\d+|[0-9a-fA-F.:/]+(\\s*,\\s*[0-9a-fA-F.:/]+)*)$',
    description: 'false, true, a hop count, or comma-separated proxy addresses/CIDRs'
  }),
  MIGRATE_ON_START: Type.Boolean({ default: false, description: 'Apply migrations before serving (always on for the embedded database)' }),
  BODY_LIMIT: Type.Integer({ default: 1048576, minimum: 1024, description: 'Largest request body in bytes' }),
  SHUTDOWN_TIMEOUT: Type.Integer({ default: 10000, minimum: 0, description: 'Milliseconds to finish in-flight requests on SIGTERM' })
})

export type Config = Static<typeof ConfigSchema>

export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  // Blank values count as unset, so `PORT=` in an env file falls back to the default.
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  try {
    return envSchema<Config>({ schema: ConfigSchema, data, dotenv: false })
  } catch (err) {
    const detail = (err as Error).message.replaceAll('env/', '')
    throw new ConfigError(`invalid configuration: ${detail}`)
  }
}

export class ConfigError extends Error {}

/** TRUST_PROXY as Fastify's trustProxy: a boolean, a hop count, or the proxies' addresses. */
export function trustProxySetting (value: string): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (value === 'true') return true
  if (value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    return (_address, hop) => hop < hops
  }
  return value.split(',').map((s) => s.trim())
}
