// Cursors of the page envelopes: `nextCursor` carries the list, its filters, the page it
// leads to and the sort key of the last record shown, so the next page starts right after
// that record (stable whatever changes meanwhile, and as cheap at page 4,000 as at page 1).
import type { Database } from '../db/client.ts'
import { readCursorSecret } from '../db/events.ts'
import { apiError, invalidField } from '../errors.ts'
import { openCursor, sealCursor } from '../lib/cursor.ts'
import { MAX_PAGE, PAGE_SIZE, type ListWindow, type SortKey } from '../schemas/common.ts'

export type ListName = 'products' | 'orders' | 'categories' | 'brands' | 'deliveries'

interface CursorPayload<F> { l: ListName, f: F, p: number, k: SortKey, o?: string }

/** The secret cursors are sealed with: the same on every instance (it lives in the database). */
export function loadCursorSecret (database: Database): Promise<string> {
  return readCursorSecret(database.db)
}

/** The cursor of the page after `page`, or null when no record follows it. */
export function nextCursor<F> (secret: string, list: ListName, filters: F, page: number, next: SortKey | null, owner?: string): string | null {
  if (next === null || page >= MAX_PAGE) return null
  const payload: CursorPayload<F> = { l: list, f: filters, p: page + 1, k: next, ...(owner === undefined ? {} : { o: owner }) }
  return sealCursor(secret, payload)
}

/**
 * The filters and window a cursor stands for. With a cursor no other list parameter may be
 * sent; a cursor of another list or another key, or one not issued here, is invalid_cursor.
 */
export function openListCursor<F> (secret: string, list: ListName, token: string, others: Record<string, unknown>, owner?: string): { filters: F, window: ListWindow } {
  const sent = Object.keys(others).filter((name) => others[name] !== undefined)
  if (sent.length > 0) throw invalidField(`query.${sent[0]!}`, 'send no other list parameter with cursor: it carries the filters of the first page')
  const payload = openCursor(secret, token) as CursorPayload<F> | null
  // Sealed here, so its list name is ours to repeat: a client that mixed up its cursors learns which.
  if (payload !== null && typeof payload.l === 'string' && payload.l !== list) {
    throw apiError('invalid_cursor', `This cursor belongs to the ${payload.l} list, not the ${list} list`)
  }
  if (payload === null || payload.o !== owner || !Number.isSafeInteger(payload.p) ||
      !Array.isArray(payload.k) || payload.k.length !== 2 || payload.k.some((v) => typeof v !== 'string')) {
    throw apiError('invalid_cursor')
  }
  return { filters: payload.f, window: { page: payload.p, limit: PAGE_SIZE, offset: 0, after: payload.k } }
}

/** The named parameters of a query (to tell which list parameters came with a cursor). */
export function pick<Q extends Record<string, unknown>, K extends string> (query: Q, names: readonly K[]): Record<K, unknown> {
  return Object.fromEntries(names.map((name) => [name, query[name]])) as Record<K, unknown>
}
