// What the reservation tests share: requests as an integrator sends them, and what they look at.
import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { App } from '../app.ts'
import { execute } from '../db/client.ts'
import type { CatalogProduct } from '../schemas/catalog-file.ts'
import { authHeaders, buildTestApp, expectError, getJson, makeKey, UNLIMITED } from './helper.ts'

export interface Reservation { id: string, status: string, items: Array<{ productId: string, combinationId: string | null, quantity: number }>, expiresAt: string, createdAt: string, orderId: string | null }

// These codes always come with per-line or per-field details.
const DETAILED = new Set(['validation_failed', 'reservation_failed', 'order_creation_failed'])
export const expectCode = (t: Parameters<typeof expectError>[0], res: Parameters<typeof expectError>[1], status: number, code: string, options: { message?: RegExp } = {}) =>
  expectError(t, res, status, code, { details: DETAILED.has(code), ...options })

export function hold (app: App, key: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/external/v1/reservations', headers: { ...authHeaders(key), 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) })
}
export const release = (app: App, key: string, id: string) => app.inject({ method: 'DELETE', url: `/external/v1/reservations/${id}`, headers: authHeaders(key) })

export async function product (app: App, key: string, id: string) {
  return (await getJson(app, key, `/external/v1/products/${id}`)).json<{ quantity: number | null, isAvailable: boolean, combinations: Array<{ id: string, quantity: number | null, isAvailable: boolean }> }>()
}

export async function events (app: App, productId: string): Promise<number> {
  const [row] = await execute<{ n: number }>(app.database.db, sql`select count(*)::int as n from change_events where type = 'product.updated' and resource_id = ${productId}::uuid`)
  return row!.n
}

export const shirt = (): CatalogProduct => {
  const variant = randomUUID(); const red = randomUUID(); const blue = randomUUID()
  return {
    id: randomUUID(),
    name: 'Held Shirt',
    price: 20,
    isAvailable: true,
    variants: [{ id: variant, name: 'Color', options: [{ id: red, name: 'Red' }, { id: blue, name: 'Blue' }] }],
    combinations: [
      { id: randomUUID(), optionIds: [red], price: 20, quantity: 3, isAvailable: true },
      { id: randomUUID(), optionIds: [blue], price: 25, quantity: 10, isAvailable: true }
    ]
  }
}

export async function store (t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t, { env: UNLIMITED })
  const { key } = await makeKey(app)
  const { key: other } = await makeKey(app)
  return { app, key, other }
}
