// Reads a JSON document whose root is an object from a stream of bytes without holding it
// whole: each element of the arrays under the chosen keys is handed on, parsed, as soon as it
// is complete, so memory holds one element at a time however long the arrays are. Any other
// value under the root is parsed whole. Each value is cut out by a small byte scanner and
// parsed by JSON.parse, which is what keeps it fast.

/** One element of an array under `key` (`index` 0, 1, …), or the whole value of `key` (`index` null). */
export interface JsonStreamEntry { key: string, index: number | null, value: unknown }

/** The bytes are not one JSON document (`kind` 'syntax'), or its root is not an object ('root'). */
export class JsonStreamError extends Error {
  constructor (readonly kind: 'syntax' | 'root', message: string) {
    super(message)
    this.name = 'JsonStreamError'
  }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c
const COLON = 0x3a

const BOM = [0xef, 0xbb, 0xbf]
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09
// Where a number, true, false or null ends.
const endsPrimitive = (b: number) => b === COMMA || b === CLOSE_BRACE || b === CLOSE_BRACKET || isSpace(b)

// Where the scanner is in the root object.
const At = { Start: 0, FirstKey: 1, Key: 2, Colon: 3, Value: 4, FirstElement: 5, Element: 6, AfterElement: 7, AfterValue: 8, End: 9 } as const
type At = typeof At[keyof typeof At]

/** A value being cut out of the bytes: its pieces so far and how far its nesting goes. */
interface Capture {
  pieces: Uint8Array[]
  /** Byte offset in the document where it starts. */
  offset: number
  /** 'container' for objects and arrays, 'string', or 'primitive'. */
  mode: 'container' | 'string' | 'primitive'
  depth: number
  inString: boolean
  escaped: boolean
}

/**
 * The scanner as a push parser: `push` each chunk in order, then `end`; both return the
 * entries completed so far.
 */
export class JsonObjectScanner {
  private at: At = At.Start
  private offset = 0
  private key = ''
  private index = 0
  private capture: Capture | null = null
  private capturing: 'key' | 'value' | 'element' = 'value'
  /** How many bytes of a byte-order mark the document started with. */
  private bom = 0

  constructor (private readonly arrayKeys: ReadonlySet<string>) {}

  push (bytes: Uint8Array): JsonStreamEntry[] {
    const chunk = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const out: JsonStreamEntry[] = []
    let i = 0
    while (i < chunk.length) {
      if (this.capture) {
        const end = this.scanValue(chunk, i)
        if (end === -1) {
          this.capture.pieces.push(chunk.subarray(i))
          i = chunk.length
          break
        }
        this.capture.pieces.push(chunk.subarray(i, end))
        this.finishCapture(out)
        i = end
        continue
      }
      const b = chunk[i]!
      // A byte-order mark is what some editors put first (its bytes may come in separate chunks); it is not part of the JSON.
      if (this.bom < 3 && this.offset + i === this.bom && b === BOM[this.bom]) {
        this.bom++
        i++
        continue
      }
      if (isSpace(b)) { i++; continue }
      const where = this.offset + i
      switch (this.at) {
        case At.Start:
          if (b !== OPEN_BRACE) {
            // Any other start of a JSON value: valid JSON, but not a catalogue.
            if (b === OPEN_BRACKET || b === QUOTE || b === 0x2d || (b >= 0x30 && b <= 0x39) || b === 0x74 || b === 0x66 || b === 0x6e) {
              throw new JsonStreamError('root', 'must be an object')
            }
            throw this.unexpected(b, where)
          }
          this.at = At.FirstKey
          i++
          break
        case At.FirstKey:
        case At.Key:
          if (b === CLOSE_BRACE && this.at === At.FirstKey) {
            this.at = At.End
            i++
            break
          }
          if (b !== QUOTE) throw this.unexpected(b, where, 'a property name')
          this.startCapture('key', where)
          break
        case At.Colon:
          if (b !== COLON) throw this.unexpected(b, where, "':'")
          this.at = At.Value
          i++
          break
        case At.Value:
          if (b === OPEN_BRACKET && this.arrayKeys.has(this.key)) {
            this.at = At.FirstElement
            this.index = 0
            i++
            break
          }
          this.startCapture('value', where, b)
          break
        case At.FirstElement:
        case At.Element:
          if (b === CLOSE_BRACKET && this.at === At.FirstElement) {
            this.at = At.AfterValue
            i++
            break
          }
          this.startCapture('element', where, b)
          break
        case At.AfterElement:
          if (b === COMMA) this.at = At.Element
          else if (b === CLOSE_BRACKET) this.at = At.AfterValue
          else throw this.unexpected(b, where, `',' or ']' after ${this.key}[${this.index - 1}]`)
          i++
          break
        case At.AfterValue:
          if (b === COMMA) this.at = At.Key
          else if (b === CLOSE_BRACE) this.at = At.End
          else throw this.unexpected(b, where, "',' or '}'")
          i++
          break
        case At.End:
          throw this.unexpected(b, where, 'nothing after the end of the document')
      }
    }
    this.offset += chunk.length
    return out
  }

  end (): JsonStreamEntry[] {
    const out: JsonStreamEntry[] = []
    // A number at the very end has nothing after it to end it.
    if (this.capture?.mode === 'primitive') this.finishCapture(out)
    if (this.at !== At.End || this.capture) {
      throw new JsonStreamError('syntax', `the document ends early, at byte ${this.offset}${this.at === At.Element || this.at === At.AfterElement || this.at === At.FirstElement ? ` (inside ${this.key})` : ''}`)
    }
    return out
  }

  private unexpected (b: number, where: number, expected?: string): JsonStreamError {
    const shown = b >= 0x20 && b < 0x7f ? `'${String.fromCharCode(b)}'` : `byte 0x${b.toString(16).padStart(2, '0')}`
    return new JsonStreamError('syntax', `unexpected ${shown} at byte ${where}${expected ? `, expected ${expected}` : ''}`)
  }

  private startCapture (what: 'key' | 'value' | 'element', offset: number, first = QUOTE): void {
    let mode: Capture['mode']
    if (first === OPEN_BRACE || first === OPEN_BRACKET) mode = 'container'
    else if (first === QUOTE) mode = 'string'
    else if (first === 0x2d || (first >= 0x30 && first <= 0x39) || first === 0x74 || first === 0x66 || first === 0x6e) mode = 'primitive'
    else throw this.unexpected(first, offset, 'a value')
    this.capturing = what
    // The opening byte is scanned like any other: depth and string state start at zero.
    this.capture = { pieces: [], offset, mode, depth: 0, inString: false, escaped: false }
  }

  /** Where the value being captured ends in `chunk` (exclusive), scanning from `from`; -1 when it goes on. */
  private scanValue (chunk: Buffer, from: number): number {
    const c = this.capture!
    if (c.mode === 'primitive') {
      for (let i = from; i < chunk.length; i++) if (endsPrimitive(chunk[i]!)) return i
      return -1
    }
    let { depth, inString, escaped } = c
    let i = from
    while (i < chunk.length) {
      if (inString) {
        if (escaped) {
          escaped = false
          i++
          continue
        }
        // Most bytes are inside strings: jump to the next quote or backslash.
        const quote = chunk.indexOf(QUOTE, i)
        const stop = Math.min(quote === -1 ? chunk.length : quote, this.nextBackslash(chunk, i))
        if (stop >= chunk.length) break
        i = stop + 1
        if (chunk[stop] === BACKSLASH) {
          escaped = true
          continue
        }
        inString = false
        if (depth === 0) return i
        continue
      }
      const b = chunk[i]!
      if (b === QUOTE) {
        inString = true
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        depth++
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (--depth === 0) return i + 1
      }
      i++
    }
    Object.assign(c, { depth, inString, escaped })
    return -1
  }

  // The next backslash of the current chunk, found once and reused until passed: a
  // search per string would scan to the end of a chunk that has none.
  private backslash: { chunk: Uint8Array | null, at: number } = { chunk: null, at: -1 }

  private nextBackslash (chunk: Buffer, from: number): number {
    const cached = this.backslash
    if (cached.chunk !== chunk || cached.at < from) {
      const at = chunk.indexOf(BACKSLASH, from)
      cached.chunk = chunk
      cached.at = at === -1 ? chunk.length : at
    }
    return cached.at
  }

  private finishCapture (out: JsonStreamEntry[]): void {
    const c = this.capture!
    this.capture = null
    const bytes = c.pieces.length === 1 ? c.pieces[0]! : Buffer.concat(c.pieces)
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
    const where = this.capturing === 'key' ? 'a property name' : this.capturing === 'element' ? `${this.key}[${this.index}]` : this.key
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      throw new JsonStreamError('syntax', `${(err as Error).message} (in ${where}, which starts at byte ${c.offset})`)
    }
    if (this.capturing === 'key') {
      this.key = value as string
      this.at = At.Colon
    } else if (this.capturing === 'element') {
      out.push({ key: this.key, index: this.index++, value })
      this.at = At.AfterElement
    } else {
      out.push({ key: this.key, index: null, value })
      this.at = At.AfterValue
    }
  }
}

/** The entries of a JSON document read from `chunks`; see JsonObjectScanner. */
export async function * readJsonObject (chunks: AsyncIterable<Uint8Array | string>, arrayKeys: ReadonlySet<string>): AsyncGenerator<JsonStreamEntry> {
  const scanner = new JsonObjectScanner(arrayKeys)
  for await (const chunk of chunks) {
    yield * scanner.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  }
  yield * scanner.end()
}
