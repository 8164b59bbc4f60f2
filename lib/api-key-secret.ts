// API key secrets: 256 random bits behind a recognisable prefix, stored only as a SHA-256 hash.
import { createHash, randomBytes } from 'node:crypto'

export const SCOPES = ['products:list', 'products:find', 'orders:create', 'orders:list', 'orders:find', 'webhooks:manage'] as const
export type Scope = typeof SCOPES[number]
export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value)

const PREFIX = 'sk_'
const SECRET_FORMAT = /^sk_[A-Za-z0-9_-]{43}$/

export function generateSecret (): string {
  return PREFIX + randomBytes(32).toString('base64url')
}

export function isWellFormedSecret (value: string): boolean {
  return SECRET_FORMAT.test(value)
}

export function hashSecret (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}
