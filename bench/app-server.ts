// Child process of bench/run.ts: the real app, alone in its process so that its memory
// (VmHWM) is the server's and nothing else's. With an in-memory PGlite the database lives
// here too, so this process fills it (catalogue, key, changes feed) before serving.
import { buildApp } from '../app.ts'
import { loadConfig } from '../config.ts'
import { migrateDatabase, openDatabase } from '../db/client.ts'
import { generateCatalog } from './catalog.ts'
import { seedFeed } from './feed.ts'
import { BENCH_RATE_LIMIT, seedStore } from './seed.ts'
import { resetPeakMemory, type AppServerOptions, type FromAppServer } from './processes.ts'

const options = JSON.parse(process.argv[2] ?? '{}') as AppServerOptions
const send = (message: FromAppServer) => process.send!(message)

const database = await openDatabase({ url: options.databaseUrl, ...(options.poolSize ? { poolSize: options.poolSize } : {}) })
let key = options.key
if (options.seed) {
  await migrateDatabase(database)
  const seeded = await seedStore(database, generateCatalog(options.seed), { analyze: options.seed.analyze })
  key = seeded.key
  const feed = options.seed.events > 0 ? await seedFeed(database, { count: options.seed.events, benchKeyId: seeded.keyId }) : undefined
  send({ type: 'seeded', importMs: seeded.importMs, ...(feed ? { feed } : {}) })
}
// What the import left behind is not the server's: collect it and restart the peak.
globalThis.gc?.()
resetPeakMemory()

// BENCH_APP_CONFIG (space-separated KEY=VALUE) sets the app's own settings, to measure a
// trade-off (CATALOG_CACHE_MB=8, say); the options' own come after it.
const fromEnvironment = Object.fromEntries((process.env.BENCH_APP_CONFIG ?? '').split(' ').filter(Boolean).map((pair) => {
  const at = pair.indexOf('=')
  if (at < 1) throw new Error(`BENCH_APP_CONFIG: "${pair}" is not KEY=VALUE`)
  return [pair.slice(0, at), pair.slice(at + 1)]
}))

const app = await buildApp({
  // order-create-webhooks delivers to receivers on 127.0.0.1 over plain http, which the
  // production defaults refuse; the worker's own settings (WEBHOOK_POLL_MS, WEBHOOK_CONCURRENCY…) stay the defaults.
  config: loadConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_MAX: String(BENCH_RATE_LIMIT), WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...fromEnvironment, ...options.config }),
  database,
  logger: false
})
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
send({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0, key: key! })

process.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return
  app.close().then(() => database.close()).finally(() => process.exit(0)).catch(() => {})
})
