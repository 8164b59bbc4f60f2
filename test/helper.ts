// Builds the real app on a fresh database of its own for each test file: a new PostgreSQL
// database when TEST_DATABASE_URL is set, an in-memory PGlite otherwise.
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import type { Test } from 'tap'
import { buildApp, type App, type AppOptions } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createApiKey } from '../db/api-keys.ts'
import { importCatalog } from '../db/catalog.ts'
import { migrateDatabase, openDatabase, type Database } from '../db/client.ts'
import { SCOPES, type Scope } from '../lib/api-key-secret.ts'
import { checkCatalog } from '../lib/catalog-file.ts'
import type { CatalogFile, CatalogProduct } from '../schemas/catalog-file.ts'
import { enforceContract } from './contract.ts'

export interface TestContext {
  teardown: (fn: () => unknown) => void
}

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL)

/** A migrated database used by this test file only, dropped at teardown. */
export async function createTestDatabase (t: TestContext, options: { poolSize?: number } = {}): Promise<{ database: Database, url?: string }> {
  const adminUrl = process.env.TEST_DATABASE_URL
  if (!adminUrl) {
    const database = await openDatabase({})
    await migrateDatabase(database)
    t.teardown(() => database.close())
    return { database }
  }
  const name = `sf_test_${Date.now()}_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database "${name}"`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const database = await openDatabase({ url: url.href, poolSize: options.poolSize ?? 10 })
  await migrateDatabase(database, url.href)
  t.teardown(async () => {
    await database.close()
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.end()
  })
  return { database, url: url.href }
}

export interface TestAppOptions extends Partial<Omit<AppOptions, 'config' | 'database'>> {
  /** Configuration as environment variables, over the test defaults. */
  database?: Database
  env?: Record<string, string>
  /** false for a test that deliberately answers outside openapi.yaml; otherwise every inject is checked against it. */
  contract?: boolean
}

/** The real app on a fresh database (or the one given), closed at teardown. */
export async function buildTestApp (t: TestContext, options: TestAppOptions = {}): Promise<App> {
  const database = options.database ?? (await createTestDatabase(t)).database
  const { contract = true, ...appOptions } = options
  const app = await buildApp({
    config: loadConfig({ LOG_LEVEL: 'silent', ...options.env }),
    logger: false,
    ...appOptions,
    database
  })
  if (contract) enforceContract(app)
  t.teardown(() => app.close())
  return app
}

/** Creates an API key and returns its secret. */
export async function makeKey (app: App, scopes: Scope[] = [...SCOPES], extra: { expiresAt?: Date, rateLimit?: number, name?: string } = {}) {
  return createApiKey(app.database.db, { name: extra.name ?? 'test', scopes, expiresAt: extra.expiresAt ?? null, rateLimit: extra.rateLimit ?? null })
}

let counter = 0
/** A valid catalogue product; ids are random unless given. */
export function makeProduct (overrides: Partial<CatalogProduct> = {}): CatalogProduct {
  counter++
  return {
    id: crypto.randomUUID(),
    name: `Product ${counter}`,
    sku: `SKU-${counter}-${randomBytes(3).toString('hex')}`,
    quantity: 10,
    price: 10,
    isAvailable: true,
    ...overrides
  }
}

/** Imports through the same path as `storefront catalog import`, and drops cached reads. */
export async function importProducts (app: App, catalog: CatalogFile | CatalogProduct[]) {
  const file = Array.isArray(catalog) ? { products: catalog } : catalog
  const summary = await importCatalog(app.database, checkCatalog(structuredClone(file)))
  await app.storeState.refresh()
  return summary
}

export function authHeaders (key: string): Record<string, string> {
  return { 'x-api-key': key }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

type Asserts = Pick<Test, 'equal' | 'same' | 'match'>

/**
 * The error body every failure answers: `{ error, message, requestId }` (plus `details` when
 * asked for), as JSON, with the Request-Id header. Returns the body for further checks.
 */
export function expectError (
  t: Asserts,
  res: { statusCode: number, headers: Record<string, unknown>, json: <T>() => T },
  status: number,
  code: string,
  options: { details?: boolean, message?: RegExp } = {}
): { error: string, message: string, requestId: string, details?: Array<Record<string, unknown>> } {
  t.equal(res.statusCode, status, `status ${status}`)
  t.match(res.headers['content-type'], /^application\/json/, 'a JSON body')
  const body = res.json<{ error: string, message: string, requestId: string, details?: Array<Record<string, unknown>> }>()
  t.same(Object.keys(body).sort(), options.details ? ['details', 'error', 'message', 'requestId'] : ['error', 'message', 'requestId'], 'the error body\'s fields')
  t.match(body, { error: code, message: /./, requestId: String(res.headers['request-id']) }, `error ${code}`)
  if (options.message) t.match(body.message, options.message, 'the message')
  return body
}
