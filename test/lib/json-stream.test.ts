import t from 'tap'
import { JsonObjectScanner, JsonStreamError, readJsonObject, type JsonStreamEntry } from '../../lib/json-stream.ts'

const LISTS = new Set(['products', 'categories'])

/** The entries of `text` pushed in pieces of the given sizes (cycled). */
function scan (text: string | Buffer, sizes: number[] = [1 << 20]): JsonStreamEntry[] {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text)
  const scanner = new JsonObjectScanner(LISTS)
  const out: JsonStreamEntry[] = []
  for (let i = 0, n = 0; i < bytes.length; n++) {
    const size = sizes[n % sizes.length]!
    out.push(...scanner.push(bytes.subarray(i, i + size)))
    i += size
  }
  out.push(...scanner.end())
  return out
}

/** The document put back together from its entries. */
function rebuild (entries: JsonStreamEntry[], emptyLists: string[] = []): Record<string, unknown> {
  const doc: Record<string, unknown> = Object.fromEntries(emptyLists.map((k) => [k, []]))
  for (const { key, index, value } of entries) {
    if (index === null) doc[key] = value
    else ((doc[key] ??= []) as unknown[])[index] = value
  }
  return doc
}

const tricky = {
  products: [
    { id: 1, name: 'quote " backslash \\ brace } bracket ] "}"', nested: [[{ a: '[' }], {}], tail: '\\' },
    'a string item with "quotes" and \\"escapes\\"',
    -12.5e-3, 0, true, false, null, [], {}, [1, [2, [3]]],
    { text: 'é 中文 😀 \u2028 \u0001 \t\n' }
  ],
  other: { products: ['not a list of the root'], x: '}}]]' },
  categories: [],
  count: 42,
  flag: false,
  nothing: null,
  label: 'plain'
}

t.test('every item and value comes out whole, wherever the chunks are cut', async (t) => {
  for (const space of [0, 2]) {
    const text = JSON.stringify(tricky, null, space)
    for (const sizes of [[1], [2], [3], [7], [1, 5, 2, 13], [64], [text.length]]) {
      const entries = scan(text, sizes)
      t.strictSame(rebuild(entries, ['categories']), JSON.parse(text), `indent ${space}, chunks of ${sizes.join('/')}`)
    }
  }
  const entries = scan(JSON.stringify(tricky))
  t.strictSame(entries.filter((e) => e.key === 'products').map((e) => e.index), tricky.products.map((_, i) => i), 'list items are numbered')
  t.strictSame(entries.find((e) => e.key === 'other'), { key: 'other', index: null, value: tricky.other }, 'any other value comes whole')
  t.notOk(entries.some((e) => e.key === 'categories'), 'an empty list gives no entry')
})

t.test('a multi-byte character cut between chunks, and a byte-order mark', async (t) => {
  const text = '{"products":[{"name":"😀中é"}]}'
  t.strictSame(scan(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), [1]), [{ key: 'products', index: 0, value: { name: '😀中é' } }])
})

t.test('readJsonObject reads an async stream of chunks, strings too', async (t) => {
  async function * source () {
    yield '{"products": [1, '
    yield Buffer.from('2, {"a"')
    yield new Uint8Array(Buffer.from(': 3}]}'))
  }
  const entries: JsonStreamEntry[] = []
  for await (const entry of readJsonObject(source(), LISTS)) entries.push(entry)
  t.strictSame(entries.map((e) => e.value), [1, 2, { a: 3 }])
})

t.test('what is not one JSON object is refused, saying where', async (t) => {
  const refusals: Array<[string, 'syntax' | 'root', RegExp]> = [
    ['[1, 2]', 'root', /^must be an object$/],
    ['"products"', 'root', /^must be an object$/],
    ['12', 'root', /^must be an object$/],
    ['', 'syntax', /^the document ends early, at byte 0$/],
    ['   ', 'syntax', /^the document ends early, at byte 3$/],
    ['{"products": [1, 2', 'syntax', /^the document ends early, at byte 18 \(inside products\)$/],
    ['{"products": [1,]}', 'syntax', /^unexpected '\]' at byte 16, expected a value$/],
    ['{"products": [1 2]}', 'syntax', /^unexpected '2' at byte 16, expected ',' or '\]' after products\[0\]$/],
    ['{"a" 1}', 'syntax', /^unexpected '1' at byte 5, expected ':'$/],
    ['{"a": 1,}', 'syntax', /^unexpected '}' at byte 8, expected a property name$/],
    ['{"a": 1} {}', 'syntax', /^unexpected '\{' at byte 9, expected nothing after the end of the document$/],
    ['{a: 1}', 'syntax', /^unexpected 'a' at byte 1, expected a property name$/],
    ['{"products": [{"a": tru}]}', 'syntax', /^Unexpected token .* \(in products\[0\], which starts at byte 14\)$/],
    ['{"a": nul}', 'syntax', /\(in a, which starts at byte 6\)$/],
    ['x', 'syntax', /^unexpected 'x' at byte 0$/],
    ['{"a": 1', 'syntax', /^the document ends early/]
  ]
  for (const [text, kind, message] of refusals) {
    for (const sizes of [[1], [1 << 20]]) {
      try {
        scan(text, sizes)
        t.fail(`${JSON.stringify(text)}: refused`)
      } catch (err) {
        t.ok(err instanceof JsonStreamError, `${JSON.stringify(text)}: a JsonStreamError`)
        t.equal((err as JsonStreamError).kind, kind, `${JSON.stringify(text)}: ${kind}`)
        t.match((err as Error).message, message, `${JSON.stringify(text)}: says ${message}`)
      }
    }
  }
  t.strictSame(scan('{}'), [], 'an empty object is fine')
  t.strictSame(scan('{"a": 1}'), [{ key: 'a', index: null, value: 1 }], 'a number at the very end of an object')
})
