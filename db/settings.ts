// Store settings the operator sets (delivery fee, default country, maintenance) and the
// catalogue's state that instances poll to drop cached reads.
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

/** What the state poll reads of the catalogue (see readStoreState). */
export interface CatalogState {
  /** Moves on every committed catalogue change: what replica reads are held to. */
  version: string
  /** Moves on changes to the whole catalogue (an import): every cached read goes. */
  resetVersion: string
  /** The last feed position published when read. */
  position: number
  /** Products changed at feed positions after the one asked about, up to `position`; null when more than the limit asked. */
  changed: string[] | null
}

/**
 * The catalogue's state and the settings in one round trip: what every instance polls.
 * `afterPosition`: the feed position the caller last saw, or null for none (first poll).
 */
export async function readStoreState (db: Tx, afterPosition: number | null = null, changedLimit = 1000): Promise<{ catalog: CatalogState, settings: StoreSettings }> {
  // Positions are handed out in commit order without gaps (db/events.ts publishEvents), so
  // the products changed after a position the caller saw are exactly those between it and the head.
  const [row] = await execute<{ version: string, reset: string, head: string, changed: string[] | null, settings: Record<string, unknown> | null }>(db, sql`
    with head as (select coalesce(max(position), 0) as position from change_events)
    select (select (case when is_called then last_value else 0 end)::text from catalog_version_seq) as version,
           (select (case when is_called then last_value else 0 end)::text from catalog_reset_seq) as reset,
           (select position::text from head) as head,
           ${afterPosition === null
             ? sql`null::json`
             : sql`(select coalesce(json_agg(resource_id), '[]'::json) from (
                     select resource_id from change_events, head
                     where change_events.position > ${afterPosition} and change_events.position <= head.position and type like 'product.%'
                     order by change_events.position limit ${changedLimit + 1}) as c)`} as changed,
           (select json_object_agg(name, value) from store_settings) as settings`)
  const changed = row!.changed === null || row!.changed.length > changedLimit ? null : row!.changed
  return {
    catalog: { version: row!.version, resetVersion: row!.reset, position: Number(row!.head), changed },
    settings: settingsFrom(row!.settings)
  }
}

/** Call after a committed change to the whole catalogue (an import): every instance drops every cached read. */
export async function resetCatalog (db: Tx): Promise<void> {
  await execute(db, sql`select nextval('catalog_reset_seq'), nextval('catalog_version_seq')`)
}

/** The catalogue version's next value, as SQL (a statement that moves it among other work). */
export const nextCatalogVersion = sql`nextval('catalog_version_seq')`

/** Call after a committed catalogue change (stock taken by an order, a price change). */
export async function bumpCatalogVersion (db: Tx): Promise<string> {
  const [row] = await execute<{ version: string }>(db, sql`select ${nextCatalogVersion}::text as version`)
  return row!.version
}
