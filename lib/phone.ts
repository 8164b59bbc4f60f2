// Phone numbers: libphonenumber-js, the region from an ISO alpha-2
// address.country, else the store's default country, else international numbers only.
import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js'

export function phoneRegion (country: unknown, defaultCountry: string | null): CountryCode | undefined {
  if (typeof country === 'string' && /^[A-Za-z]{2}$/.test(country.trim()) && isSupportedCountry(country.trim().toUpperCase())) {
    return country.trim().toUpperCase() as CountryCode
  }
  return defaultCountry !== null && isSupportedCountry(defaultCountry) ? defaultCountry as CountryCode : undefined
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
