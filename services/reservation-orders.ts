// An order that names a reservation (services/place-order.ts): the reservation is checked
// and locked, its held units count as the order's stock, and it ends consumed by the order.
import type { SellableRow } from '../db/orders.ts'
import { endReservation, lockReservation, type LockedReservation } from '../db/reservations.ts'
import { ApiError, apiError } from '../errors.ts'
import type { OrderLine } from './order-request.ts'

export function notActive (reservation: Pick<LockedReservation, 'status' | 'lapsed'>): ApiError {
  const status = reservation.status === 'active' ? 'expired' : reservation.status
  return apiError('reservation_not_active', `The reservation is ${status}${status === 'consumed' ? ' by an order' : '; hold the stock again'}`)
}

/** What a reservation holds for an order: units per stock row (combination or product id). */
export interface HeldForOrder { id: string, held: Map<string, number> }

const stockKey = (line: { productId: string, combinationId: string | null }) => line.combinationId ?? line.productId
const lineKey = (line: { productId: string, combinationId: string | null }) => `${line.productId}/${line.combinationId ?? ''}`

function totals (lines: Array<{ productId: string, combinationId: string | null, quantity: number }>): Map<string, number> {
  const sums = new Map<string, number>()
  for (const line of lines) sums.set(lineKey(line), (sums.get(lineKey(line)) ?? 0) + line.quantity)
  return sums
}

/**
 * Locks the key's reservation for an order and checks it: 404 reservation_not_found, 409
 * reservation_not_active, 400 reservation_mismatch unless the lines add up to the same
 * products, combinations and quantities (in any order, split or merged).
 */
export async function reservationForOrder (tx: Parameters<typeof lockReservation>[0], apiKeyId: string, reservationId: string, lines: OrderLine[], now: Date): Promise<HeldForOrder> {
  const reservation = await lockReservation(tx, apiKeyId, reservationId, now)
  if (reservation === null) throw apiError('reservation_not_found')
  if (reservation.status !== 'active' || reservation.lapsed) throw notActive(reservation)
  const reserved = totals(reservation.lines)
  const ordered = totals(lines)
  for (const key of new Set([...reserved.keys(), ...ordered.keys()])) {
    if (reserved.get(key) !== ordered.get(key)) {
      const [productId, combinationId] = key.split('/')
      const what = combinationId ? `combination ${combinationId} of product ${productId}` : `product ${productId}`
      throw apiError('reservation_mismatch', `The order's lines must hold what the reservation holds: ${what} is reserved ${reserved.get(key) ?? 0}, ordered ${ordered.get(key) ?? 0}`)
    }
  }
  const held = new Map<string, number>()
  for (const line of reservation.lines) held.set(stockKey(line), (held.get(stockKey(line)) ?? 0) + line.held)
  return { id: reservation.id, held }
}

/** The sellable rows as the order sees them: with the units its reservation holds counted back in. */
export function withHeldUnits (sellables: Map<string, SellableRow>, reservation: HeldForOrder): Map<string, SellableRow> {
  for (const [id, units] of reservation.held) {
    const row = sellables.get(`c:${id}`) ?? sellables.get(`p:${id}`)
    if (row && row.quantity !== null && units > 0) {
      sellables.set(row.combination_id ? `c:${id}` : `p:${id}`, { ...row, quantity: row.quantity + units })
    }
  }
  return sellables
}

/** Stock an order still has to take beyond what its reservation holds (none, unless an import shrank the hold). */
export function beyondHeld<S extends { id: string, quantity: number }> (stock: S[], reservation: HeldForOrder): S[] {
  return stock.map((s) => ({ ...s, quantity: s.quantity - (reservation.held.get(s.id) ?? 0) })).filter((s) => s.quantity > 0)
}

/** The reservation is consumed by the order: nothing of it is held any more. */
export async function consumeReservation (tx: Parameters<typeof lockReservation>[0], reservation: HeldForOrder, orderId: string, now: Date): Promise<void> {
  await endReservation(tx, reservation.id, 'consumed', now, orderId)
}
