// Phone numbers: libphonenumber-js, the region from an ISO alpha-2
// address.country, else the store's default country, else international numbers only.
import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js'

/** An ISO 3166 alpha-2 code (any case, blanks around it ignored) that phone numbers can be read in, upper-cased; else null. */
export function countryCode (text: unknown): CountryCode | null {
  if (typeof text !== 'string') return null
  const code = text.trim().toUpperCase()
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code) ? code : null
}

export function phoneRegion (country: unknown, defaultCountry: string | null): CountryCode | undefined {
  return countryCode(country) ?? (defaultCountry === null ? null : countryCode(defaultCountry)) ?? undefined
}

/** The number in E.164, or null when it is not a valid phone number for the region. */
export function toE164 (text: unknown, region: CountryCode | undefined): string | null {
  if (typeof text !== 'string' || text.trim() === '') return null
  const trimmed = text.trim()
  // Without a region only international numbers can be read.
  if (region === undefined && !trimmed.startsWith('+')) return null
  const parsed = parsePhoneNumberFromString(trimmed, region)
  return parsed?.isValid() ? parsed.number : null
}
