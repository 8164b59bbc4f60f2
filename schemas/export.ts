// Exports: their query parameters (the list's filters, nothing that pages) and their NDJSON
// lines (records as GET answers them, then one closing line).
import { Type, type Static, type TSchema } from 'typebox'
import { CURSOR_MAX_LENGTH, Count, ref } from './common.ts'
import { ListOrdersQuery, Order } from './orders.ts'
import { ListProductsQuery, Product } from './products.ts'

export const NDJSON = 'application/x-ndjson'

export const ExportEnd = Type.Object({
  exportEnd: Type.Object({
    count: Count('How many record lines came before this one'),
    changesCursor: Type.String({
      maxLength: CURSOR_MAX_LENGTH,
      description: 'Where to start following the changes feed (`GET /external/v1/changes?after=…`): it yields every change this export does not show; one it shows may come again, and applying it again is harmless',
      examples: ['evt_1042']
    })
  }, { additionalProperties: false })
}, {
  $id: 'ExportEnd',
  title: 'ExportEnd',
  description: 'The last line of every export. A body that does not end with it was cut short: export again',
  additionalProperties: false
})
export type ExportEnd = Static<typeof ExportEnd>

function exportLine<T extends TSchema & { $id?: string }> (record: T, id: string, description: string) {
  return Type.Unsafe<Static<T> | ExportEnd>({ anyOf: [ref(record), ref(ExportEnd)], $id: id, title: id, description })
}

export const ProductExportLine = exportLine(Product, 'ProductExportLine',
  'One line of a products export: a Product exactly as GET /external/v1/products/{id} answers it, or the closing ExportEnd')
export const OrderExportLine = exportLine(Order, 'OrderExportLine',
  'One line of an orders export: an Order exactly as GET /external/v1/orders/{orderNumberOrId} answers it, or the closing ExportEnd')

// The parameters of an export: its list's own, without page and cursor (the route refuses
// any other by name).
export const ExportProductsQuery = Type.Omit(ListProductsQuery, ['page', 'cursor'], { additionalProperties: false })
export const ExportOrdersQuery = Type.Omit(ListOrdersQuery, ['page', 'cursor'], { additionalProperties: false })

export const exportSchemas = [ExportEnd, ProductExportLine, OrderExportLine]
