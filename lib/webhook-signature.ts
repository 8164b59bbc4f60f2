// Standard Webhooks signing: `whsec_` secrets and the `v1,` HMAC-SHA256 signature of
// `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the secret's base64-decoded bytes.
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'

export function generateWebhookSecret (): string {
  return PREFIX + randomBytes(32).toString('base64')
}

export function signWebhook (secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The `webhook-signature` header: one signature per secret, space-separated (two during a rotation). */
export function signatureHeader (secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => signWebhook(secret, id, timestamp, body)).join(' ')
}
