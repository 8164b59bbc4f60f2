// What every /external/v1 operation shares: the errors any of them can answer.
import type { ErrorCode } from '../../../errors.ts'
import { errorResponses } from '../../../schemas/common.ts'

const COMMON_ERRORS = ['validation_failed', 'invalid_api_key', 'insufficient_scope', 'rate_limit_exceeded', 'internal_error', 'service_unavailable'] as const

/** The documented error responses of an operation: its own codes plus those every operation can answer. */
export function v1Errors<C extends ErrorCode> (...codes: C[]) {
  return errorResponses<C | typeof COMMON_ERRORS[number]>(...codes, ...COMMON_ERRORS)
}
