// A request body's fingerprint as a JSON value: key order and whitespace do not change it.
import { createHash } from 'node:crypto'

function canonical (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
  }
  return value
}

export function requestHash (body: unknown): string {
  return createHash('sha256').update(JSON.stringify(canonical(body))).digest('hex')
}
