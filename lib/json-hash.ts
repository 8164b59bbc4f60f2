// A JSON value's fingerprint: key order and whitespace do not change it (request bodies
// for Idempotency-Key, catalogue products for "did this import change anything").
import { createHash } from 'node:crypto'

function canonical (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
  }
  return value
}

export function jsonHash (value: unknown): string {
  return createHash('sha256').update(JSON.stringify(canonical(value))).digest('hex')
}
