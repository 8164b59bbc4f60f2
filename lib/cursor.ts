// Opaque, tamper-evident cursors: a JSON payload in base64url behind an HMAC of it, so the
// service can read back what it handed out and refuse anything else.
import { createHmac, timingSafeEqual } from 'node:crypto'

const MAC_LENGTH = 22

function mac (secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url').slice(0, MAC_LENGTH)
}

export function sealCursor (secret: string, payload: unknown): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${body}.${mac(secret, body)}`
}

/** The payload of a cursor this secret sealed; null for anything else (altered, foreign, garbage). */
export function openCursor (secret: string, token: string): unknown {
  const dot = token.lastIndexOf('.')
  if (dot <= 0) return null
  const body = token.slice(0, dot)
  const expected = Buffer.from(mac(secret, body))
  const given = Buffer.from(token.slice(dot + 1))
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as unknown
  } catch {
    return null
  }
}
