// The shop's settings, as the operator sees and changes them: the delivery fee added to
// orders with an address, the default country of phone numbers written without +, and
// maintenance. Every instance reads them through its state poll (services/store.ts), so a
// change is in force everywhere within a few seconds.
import type { Database } from '../db/client.ts'
import { readSettings, writeSetting } from '../db/settings.ts'
import { apiError } from '../errors.ts'
import { toCents, toDecimalText } from '../lib/money.ts'
import { countryCode } from '../lib/phone.ts'

export interface ShopSettings {
  /** The amount, exact to the cent. */
  deliveryFee: number
  /** ISO 3166 alpha-2, or null. */
  defaultCountry: string | null
  maintenance: boolean
}

export const SETTING_NAMES = ['deliveryFee', 'defaultCountry'] as const

export async function readShopSettings (database: Database): Promise<ShopSettings> {
  const stored = await readSettings(database.db)
  // Stored as decimal text so no float rounding creeps in; shown as the amount it is.
  return { deliveryFee: Number(toDecimalText(toCents(String(stored.deliveryFee)))), defaultCountry: stored.defaultCountry, maintenance: stored.maintenance }
}

/** One setting's new value, checked, in the form it is stored. */
export type SettingChange = { name: 'deliveryFee', value: string } | { name: 'defaultCountry', value: string | null }

/**
 * Reads one setting from its text form: `deliveryFee` an amount of at least 0 with at most
 * two decimals; `defaultCountry` an ISO 3166 alpha-2 code, or `none`. A bad name or value is
 * validation_failed. Checked before any database is opened.
 */
export function settingChange (name: string, value: string): SettingChange {
  if (name === 'deliveryFee') {
    // numeric(12,2): at most ten digits before the point.
    if (!/^\d{1,10}(\.\d{1,2})?$/.test(value)) throw apiError('validation_failed', `deliveryFee must be an amount of at least 0 with at most two decimals, such as 4.99, got ${value}`)
    return { name, value: toDecimalText(toCents(value)) }
  }
  if (name === 'defaultCountry') {
    if (value.toLowerCase() === 'none') return { name, value: null }
    const country = countryCode(value)
    if (country === null) throw apiError('validation_failed', `defaultCountry must be an ISO 3166 alpha-2 code such as US or DE (or none), got ${value}`)
    return { name, value: country }
  }
  throw apiError('validation_failed', `unknown setting ${name}; settings are ${SETTING_NAMES.join(', ')}`)
}

/** Stores a checked setting; returns it as `settings list --json` shows it. */
export async function changeSetting (database: Database, change: SettingChange): Promise<Partial<ShopSettings>> {
  if (change.name === 'deliveryFee') {
    await writeSetting(database.db, 'deliveryFee', change.value)
    return { deliveryFee: Number(change.value) }
  }
  await writeSetting(database.db, 'defaultCountry', change.value)
  return { defaultCountry: change.value }
}

/** While on, creating an order answers 503 store_under_maintenance; reads keep working. */
export async function setMaintenance (database: Database, on: boolean): Promise<void> {
  await writeSetting(database.db, 'maintenance', on)
}
