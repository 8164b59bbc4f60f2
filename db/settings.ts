// Store settings the operator sets (delivery fee, default country, maintenance) and the
// catalogue version that instances poll to drop cached reads.
import { sql } from 'drizzle-orm'
import { execute, type Tx } from './client.ts'
import { storeSettings } from './schema.ts'

export interface StoreSettings {
  /** Decimal text, added to finalTotal when an order has an address. */
  deliveryFee: string
  /** ISO 3166 alpha-2, the region of phone numbers written without `+`. */
  defaultCountry: string | null
  maintenance: boolean
}

export const DEFAULT_SETTINGS: StoreSettings = { deliveryFee: '0.00', defaultCountry: null, maintenance: false }

export type SettingName = keyof StoreSettings

export function settingsFrom (stored: Record<string, unknown> | null): StoreSettings {
  return { ...DEFAULT_SETTINGS, ...(stored ?? {}) } as StoreSettings
}

export async function readSettings (db: Tx): Promise<StoreSettings> {
  const rows = await db.select().from(storeSettings)
  return settingsFrom(Object.fromEntries(rows.map((r) => [r.name, r.value])))
}

export async function writeSetting<K extends SettingName> (db: Tx, name: K, value: StoreSettings[K]): Promise<void> {
  await db.insert(storeSettings).values({ name, value })
    .onConflictDoUpdate({ target: storeSettings.name, set: { value, updatedAt: new Date() } })
}

/** The catalogue version and the settings in one round trip: what every instance polls. */
export async function readStoreState (db: Tx): Promise<{ catalogVersion: string, settings: StoreSettings }> {
  const [row] = await execute<{ version: string, settings: Record<string, unknown> | null }>(db, sql`
    select (select (case when is_called then last_value else 0 end)::text from catalog_version_seq) as version,
           (select json_object_agg(name, value) from store_settings) as settings`)
  return { catalogVersion: row!.version, settings: settingsFrom(row!.settings) }
}

/** Call after a committed catalogue change (import, stock taken by an order). */
export async function bumpCatalogVersion (db: Tx): Promise<string> {
  const [row] = await execute<{ version: string }>(db, sql`select nextval('catalog_version_seq')::text as version`)
  return row!.version
}
