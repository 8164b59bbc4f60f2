// A map from UUIDs to non-negative numbers held in typed arrays: 24 bytes a slot (the id's
// 128 bits and a float64), where a Map keyed by id strings costs about ten times that, so a
// catalogue file's half a million ids fit in a few tens of megabytes. Ids compare as
// PostgreSQL's uuid type does: hex digits in any case, dashes ignored.

const EMPTY = -1

export class UuidMap {
  private keys: Uint32Array
  private values: Float64Array
  private count = 0
  private readonly word = new Uint32Array(4)

  constructor (capacity = 1024) {
    let slots = 16
    while (slots < capacity * 2) slots *= 2
    this.keys = new Uint32Array(slots * 4)
    this.values = new Float64Array(slots).fill(EMPTY)
  }

  get size (): number {
    return this.count
  }

  get (id: string): number | undefined {
    const slot = this.find(id)
    const value = this.values[slot]!
    return value === EMPTY ? undefined : value
  }

  /** Sets the value of an id; `value` must be a non-negative number. */
  set (id: string, value: number): void {
    if (!(value >= 0)) throw new RangeError('UuidMap values are non-negative numbers')
    let slot = this.find(id)
    if (this.values[slot] === EMPTY) {
      // At most half full, so probes stay short.
      if ((this.count + 1) * 2 > this.values.length) {
        this.grow()
        slot = this.find(id)
      }
      this.keys.set(this.word, slot * 4)
      this.count++
    }
    this.values[slot] = value
  }

  /** The slot holding `id`, or the empty one where it would go; leaves its words in `this.word`. */
  private find (id: string): number {
    parseUuid(id, this.word)
    const [a, b, c, d] = this.word as unknown as [number, number, number, number]
    const mask = this.values.length - 1
    let slot = hash(a, b, c, d) & mask
    for (;;) {
      if (this.values[slot] === EMPTY) return slot
      const at = slot * 4
      if (this.keys[at] === a && this.keys[at + 1] === b && this.keys[at + 2] === c && this.keys[at + 3] === d) return slot
      slot = (slot + 1) & mask
    }
  }

  private grow (): void {
    const { keys, values } = this
    this.keys = new Uint32Array(keys.length * 2)
    this.values = new Float64Array(values.length * 2).fill(EMPTY)
    const mask = this.values.length - 1
    for (let old = 0; old < values.length; old++) {
      if (values[old] === EMPTY) continue
      const at = old * 4
      let slot = hash(keys[at]!, keys[at + 1]!, keys[at + 2]!, keys[at + 3]!) & mask
      while (this.values[slot] !== EMPTY) slot = (slot + 1) & mask
      this.keys.set(keys.subarray(at, at + 4), slot * 4)
      this.values[slot] = values[old]!
    }
  }
}

function hash (a: number, b: number, c: number, d: number): number {
  let h = Math.imul(a, 0x85ebca6b) ^ Math.imul(b, 0xc2b2ae35) ^ Math.imul(c, 0x27d4eb2f) ^ Math.imul(d, 0x165667b1)
  h ^= h >>> 15
  h = Math.imul(h, 0x2c1b3c6d)
  return (h ^ (h >>> 13)) >>> 0
}

/** The 32 hex digits of a UUID (dashes skipped) as four 32-bit words; throws on anything else. */
function parseUuid (id: string, out: Uint32Array): void {
  let digits = 0
  let word = 0
  for (let i = 0; i < id.length; i++) {
    const ch = id.charCodeAt(i)
    if (ch === 0x2d) continue
    const nibble = ch >= 0x30 && ch <= 0x39 ? ch - 0x30 : ch >= 0x61 && ch <= 0x66 ? ch - 0x57 : ch >= 0x41 && ch <= 0x46 ? ch - 0x37 : -1
    if (nibble < 0 || digits === 32) throw new TypeError(`not a UUID: ${id}`)
    word = (word << 4) | nibble
    if (++digits % 8 === 0) {
      out[digits / 8 - 1] = word >>> 0
      word = 0
    }
  }
  if (digits !== 32) throw new TypeError(`not a UUID: ${id}`)
}
