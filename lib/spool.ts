// Values written once to a temporary file and read back as often as needed, in bounded
// memory: a catalogue import checks its whole file before it writes anything (so it holds no
// lock while a slow source is read), then reads the checked items again from here.
import { once } from 'node:events'
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

export class Spool<T> {
  #out: WriteStream | null
  #count = 0

  private constructor (private readonly dir: string, private readonly file: string) {
    this.#out = createWriteStream(file)
  }

  /** A new, empty spool in its own temporary folder; `remove` deletes it. */
  static async create<T> (name: string): Promise<Spool<T>> {
    const dir = await mkdtemp(join(tmpdir(), `${name}-`))
    return new Spool<T>(dir, join(dir, 'spool.ndjson'))
  }

  get count (): number {
    return this.#count
  }

  async add (value: T): Promise<void> {
    if (this.#out === null) throw new Error('the spool is closed for writing')
    this.#count++
    // One JSON value a line: JSON.stringify escapes every line break inside strings.
    if (!this.#out.write(`${JSON.stringify(value)}\n`)) await once(this.#out, 'drain')
  }

  /** Ends the writing; reading may start. */
  async close (): Promise<void> {
    const out = this.#out
    if (out === null) return
    this.#out = null
    out.end()
    await once(out, 'finish')
  }

  /** The values in the order they were added. */
  async * values (): AsyncGenerator<T> {
    if (this.#out !== null) throw new Error('the spool is still being written')
    const lines = createInterface({ input: createReadStream(this.file), crlfDelay: Infinity })
    for await (const line of lines) yield JSON.parse(line) as T
  }

  /** Deletes the file; safe to call more than once, and while it is being written. */
  async remove (): Promise<void> {
    const out = this.#out
    this.#out = null
    if (out !== null) {
      out.destroy()
      await once(out, 'close').catch(() => {})
    }
    await rm(this.dir, { recursive: true, force: true })
  }
}
