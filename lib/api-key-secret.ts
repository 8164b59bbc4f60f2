// API key secrets: 256 random bits behind a recognisable prefix, stored only as a SHA-256 hash.
import { createHash, randomBytes } from 'node:crypto'

export const SCOPES = ['products:list', 'products:find', 'orders:create', 'orders:list', 'orders:find', 'webhooks:manage'] as const
export type Scope = typeof SCOPES[number]
export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value)

/** live keys order for real; test keys read the live catalogue but their orders take nothing. */
export const KEY_MODES = ['live', 'test'] as const
export type KeyMode = typeof KEY_MODES[number]
export const isKeyMode = (value: string): value is KeyMode => (KEY_MODES as readonly string[]).includes(value)

// A test secret says so at a glance (in logs, in a config file); the mode itself is the
// key's stored column, never read from the prefix.
const PREFIXES: Record<KeyMode, string> = { live: 'sk_', test: 'sk_test_' }
const SECRET_FORMAT = /^sk_(?:test_)?[A-Za-z0-9_-]{43}$/

export function generateSecret (mode: KeyMode = 'live'): string {
  return PREFIXES[mode] + randomBytes(32).toString('base64url')
}

export function isWellFormedSecret (value: string): boolean {
  return SECRET_FORMAT.test(value)
}

export function hashSecret (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}
