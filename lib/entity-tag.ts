// The strong entity tag of a response body: a hash of its bytes, so it changes whenever the body does.
import { createHash } from 'node:crypto'

export function entityTag (body: string): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`
}
