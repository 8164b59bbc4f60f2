// What integrators send and see of stock reservations (holds).
import { Type, type Static } from 'typebox'
import { Nullable, Timestamp, Uuid, ref } from './common.ts'
import { CREATE_RESERVATION_EXAMPLE } from './examples.ts'
import { OrderItemInput, MAX_LINE_QUANTITY, MAX_ORDER_LINES } from './orders.ts'

export const RESERVATION_TTL = { min: 60, max: 3600, default: 900 } as const
export const MAX_ACTIVE_RESERVATIONS = 100
/** The version of the Reservation shape an Idempotency-Key replay stores. */
export const RESERVATION_SHAPE_VERSION = 1

export const CreateReservationBody = Type.Object({
  items: Type.Array(ref(OrderItemInput), { minItems: 1, maxItems: MAX_ORDER_LINES, description: 'The lines to hold, checked as an order\'s lines are' }),
  ttlSeconds: Type.Optional(Type.Integer({
    format: 'int32',
    minimum: RESERVATION_TTL.min,
    maximum: RESERVATION_TTL.max,
    description: `How long the hold lasts, in seconds: ${RESERVATION_TTL.min} to ${RESERVATION_TTL.max}; ${RESERVATION_TTL.default} when omitted`
  }))
}, {
  $id: 'CreateReservationRequest',
  title: 'CreateReservationRequest',
  description: 'The products (and combinations) to hold while your shopper checks out',
  examples: [CREATE_RESERVATION_EXAMPLE]
})
export type CreateReservationBody = Static<typeof CreateReservationBody>

export const RESERVATION_STATUSES = ['active', 'consumed', 'released', 'expired'] as const
export type ReservationStatus = typeof RESERVATION_STATUSES[number]

export const ReservationItem = Type.Object({
  productId: Uuid,
  combinationId: Nullable(Uuid),
  quantity: Type.Integer({ format: 'int32', minimum: 1, maximum: MAX_LINE_QUANTITY })
}, { $id: 'ReservationItem', title: 'ReservationItem', additionalProperties: false })

export const Reservation = Type.Object({
  id: Uuid,
  status: Type.Unsafe<typeof RESERVATION_STATUSES[number]>({
    type: 'string',
    enum: [...RESERVATION_STATUSES],
    description: 'active (its units are held), consumed (an order took them: orderId), released (you released it) or expired (its units went back at expiresAt)',
    examples: ['active']
  }),
  items: Type.Array(ref(ReservationItem), { maxItems: MAX_ORDER_LINES, description: 'The lines as sent, each with its quantity (1 when omitted)' }),
  expiresAt: Timestamp('When the hold ends unless an order consumes it first'),
  createdAt: Timestamp('When the hold was made'),
  orderId: Nullable({ ...Uuid, description: 'The order that consumed it; null unless consumed' })
}, { $id: 'Reservation', title: 'Reservation', additionalProperties: false })
export type Reservation = Static<typeof Reservation>

export const ReservationParams = Type.Object({ id: Uuid }, { additionalProperties: false })

export const reservationSchemas = [CreateReservationBody, ReservationItem, Reservation]
