// Reads a create-order body in the order of checks decisions §3 fixes: each field's own
// error code first, then the rest of the schema. Bodies are never type-coerced.
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { StoreSettings } from '../db/settings.ts'
import { apiError } from '../errors.ts'
import { isUuid } from '../schemas/common.ts'
import { Address, CreateOrderBody, MAX_LINE_QUANTITY, MAX_ORDER_LINES, OrderItemInput } from '../schemas/orders.ts'
import { phoneRegion, toE164 } from './phone.ts'
import { dottedPath } from './validation.ts'

export interface OrderLine { productId: string, combinationId: string | null, quantity: number }

export interface OrderRequest {
  customerName: string
  customerPhone: string
  note: string | null
  lines: OrderLine[]
  /** With its phone in E.164 (customerPhone when none was sent). */
  address: Address | null
}

const ajv = new Ajv({ allErrors: false, coerceTypes: false, strict: false })
addFormats.default(ajv)
ajv.addSchema(OrderItemInput).addSchema(Address)
const validateBody = ajv.compile(CreateOrderBody)

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function readOrderRequest (body: unknown, settings: StoreSettings): OrderRequest {
  if (!isObject(body)) throw apiError('validation_failed', 'The body must be a JSON object', { details: [{ path: 'body', message: 'must be object' }] })

  const { customerName, items } = body
  if (typeof customerName !== 'string' || customerName.trim() === '') {
    throw apiError('customer_name_required', 'customerName is required and must not be blank')
  }
  if (!Array.isArray(items) || items.length === 0) throw apiError('items_required', 'items must be a non-empty array')
  if (items.length > MAX_ORDER_LINES) {
    throw apiError('validation_failed', `An order has at most ${MAX_ORDER_LINES} lines`, { details: [{ path: 'body.items', message: `must have at most ${MAX_ORDER_LINES} items` }] })
  }
  items.forEach((item, i) => {
    if (!isObject(item) || !isUuid(item.productId)) throw apiError('invalid_item', `items[${i}].productId must be a product GUID`)
  })
  items.forEach((item, i) => {
    const quantity = (item as Record<string, unknown>).quantity
    if (quantity !== undefined && !(Number.isInteger(quantity) && (quantity as number) >= 1 && (quantity as number) <= MAX_LINE_QUANTITY)) {
      throw apiError('invalid_quantity', `items[${i}].quantity must be a whole number from 1 to ${MAX_LINE_QUANTITY.toLocaleString('en')}`)
    }
  })

  const address = isObject(body.address) ? body.address : null
  const region = phoneRegion(address?.country, settings.defaultCountry)
  const customerPhone = toE164(body.customerPhone, region)
  if (customerPhone === null) throw apiError('invalid_phone_number', 'customerPhone is not a valid phone number' + regionHint(body.customerPhone, region))
  let deliveryPhone = customerPhone
  if (address?.phone !== undefined && address.phone !== null) {
    const phone = toE164(address.phone, region)
    if (phone === null) throw apiError('invalid_phone_number', 'address.phone is not a valid phone number' + regionHint(address.phone, region))
    deliveryPhone = phone
  }

  if (!validateBody(body)) {
    const details = validateBody.errors!.map((e) => ({
      path: ['body', dottedPath(e.instancePath, (e.params as { missingProperty?: string }).missingProperty)].filter(Boolean).join('.'),
      message: e.message ?? 'is invalid'
    }))
    throw apiError('validation_failed', `${details[0]!.path}: ${details[0]!.message}`, { details })
  }
  const valid = body as unknown as { note?: string | null, items: Array<{ productId: string, combinationId?: string | null, quantity?: number }>, address?: Address | null }
  return {
    customerName: customerName.trim(),
    customerPhone,
    note: valid.note ?? null,
    lines: valid.items.map((item) => ({
      productId: item.productId.toLowerCase(),
      combinationId: item.combinationId?.toLowerCase() ?? null,
      quantity: item.quantity ?? 1
    })),
    address: valid.address ? { ...valid.address, phone: deliveryPhone } : null
  }
}

function regionHint (text: unknown, region: string | undefined): string {
  if (region === undefined && typeof text === 'string' && !text.trim().startsWith('+')) {
    return ': write it with +country code, or send an ISO alpha-2 address.country'
  }
  return region === undefined ? '' : ` for region ${region}`
}
