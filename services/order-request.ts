// Reads a create-order body in the order of checks the contract fixes: each field's own
// error code first (customer name, items, item ids, quantities, phones), then the rest of
// the schema. Bodies are never type-coerced.
import { apiError, invalidField } from '../errors.ts'
import { phoneRegion, toE164 } from '../lib/phone.ts'
import { addSharedSchemas, bodyAjv, validationDetails } from '../lib/validation.ts'
import { isUuid } from '../schemas/common.ts'
import { Address, CreateOrderBody, MAX_LINE_QUANTITY, MAX_ORDER_LINES, OrderItemInput } from '../schemas/orders.ts'
import type { StoreSettings } from '../db/settings.ts'

export interface OrderLine { productId: string, combinationId: string | null, quantity: number }

export interface OrderRequest {
  customerName: string
  customerPhone: string
  note: string | null
  lines: OrderLine[]
  /** The reservation whose held units the order takes, if one was named. */
  reservationId: string | null
  /** With its phone in E.164 (customerPhone when none was sent). */
  address: Address | null
}

addSharedSchemas([OrderItemInput, Address])
const validateBody = bodyAjv.compile(CreateOrderBody)

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function readOrderRequest (body: unknown, settings: Pick<StoreSettings, 'defaultCountry'>): OrderRequest {
  if (!isObject(body)) throw invalidField('body', 'must be an object')

  const { customerName, items } = body
  if (customerName !== undefined && customerName !== null && typeof customerName !== 'string') {
    const given = Array.isArray(customerName) ? 'an array' : typeof customerName === 'object' ? 'an object' : `a ${typeof customerName}`
    throw apiError('customer_name_required', `customerName must be a string, not ${given}`)
  }
  if (typeof customerName !== 'string' || customerName.trim() === '') throw apiError('customer_name_required')
  checkItems(items)

  const address = isObject(body.address) ? body.address : null
  const region = phoneRegion(address?.country, settings.defaultCountry)
  const customerPhone = readPhone('customerPhone', body.customerPhone, region)
  const deliveryPhone = address?.phone !== undefined && address.phone !== null
    ? readPhone('address.phone', address.phone, region)
    : customerPhone

  if (!validateBody(body)) {
    const details = validationDetails(validateBody.errors!, 'body')
    throw apiError('validation_failed', `${details[0]!.path}: ${details[0]!.message}`, { details })
  }
  const valid = body as unknown as CreateOrderBody
  return {
    customerName: customerName.trim(),
    customerPhone,
    note: valid.note ?? null,
    lines: valid.items.map((item) => ({
      productId: item.productId.toLowerCase(),
      combinationId: item.combinationId?.toLowerCase() ?? null,
      quantity: item.quantity ?? 1
    })),
    address: valid.address ? { ...valid.address, phone: deliveryPhone } : null,
    reservationId: valid.reservationId?.toLowerCase() ?? null
  }
}

/** The item checks an order and a reservation share, in the contract's order: items_required, invalid_item, invalid_quantity. */
export function checkItems (items: unknown): void {
  if (!Array.isArray(items) || items.length === 0) throw apiError('items_required')
  if (items.length > MAX_ORDER_LINES) throw invalidField('body.items', `must have at most ${MAX_ORDER_LINES} items`)
  items.forEach((item, i) => {
    if (!isObject(item) || !isUuid(item.productId)) throw apiError('invalid_item', `items[${i}].productId must be a product GUID`)
  })
  items.forEach((item, i) => {
    const quantity = (item as Record<string, unknown>).quantity
    if (quantity !== undefined && !(Number.isInteger(quantity) && (quantity as number) >= 1 && (quantity as number) <= MAX_LINE_QUANTITY)) {
      throw apiError('invalid_quantity', `items[${i}].quantity must be a whole number from 1 to ${MAX_LINE_QUANTITY.toLocaleString('en')}`)
    }
  })
}

function readPhone (field: string, text: unknown, region: ReturnType<typeof phoneRegion>): string {
  if (text === undefined || text === null) throw apiError('invalid_phone_number', `${field} is required: send a phone number`)
  if (typeof text === 'string' && text.trim() === '') throw apiError('invalid_phone_number', `${field} must not be blank: send a phone number`)
  const phone = toE164(text, region)
  if (phone === null) throw apiError('invalid_phone_number', `${field} is not a valid phone number${regionHint(text, region)}`)
  return phone
}

function regionHint (text: unknown, region: string | undefined): string {
  if (region === undefined && typeof text === 'string' && !text.trim().startsWith('+')) {
    return ': write it with +country code, or send an ISO alpha-2 address.country'
  }
  return region === undefined ? '' : ` for region ${region}`
}
