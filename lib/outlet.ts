// Where a producer of text (an export reading its rows) writes, at its reader's pace.
//   Outlet: a readable stream whose `send` resolves only once the stream has room again, so the
//     producer is never more than its buffer ahead of a slow client, and fails as soon as the
//     stream is destroyed (the client gone or cut off).
//   FileSpool: a temporary file written whole, then read back as a stream; for a producer
//     that must finish before anything is sent.
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'

/** What `send` throws once nobody reads any more. */
export class SinkClosedError extends Error {
  constructor () {
    super('the reader is gone')
    this.name = 'SinkClosedError'
  }
}

export interface TextSink {
  /** Resolves once more may be sent; rejects with SinkClosedError when the reader is gone. */
  send: (chunk: string | Buffer) => Promise<void>
}

export class Outlet extends Readable implements TextSink {
  #wake: (() => void) | null = null

  constructor (highWaterMark = 64 * 1024) {
    super({ highWaterMark })
    this.once('close', () => this.#resume())
  }

  override _read (): void {
    this.#resume()
  }

  async send (chunk: string | Buffer): Promise<void> {
    if (this.destroyed) throw new SinkClosedError()
    if (this.push(chunk)) return
    await new Promise<void>((resolve) => { this.#wake = resolve })
    if (this.destroyed) throw new SinkClosedError()
  }

  /** No more text: the stream ends once what it holds is read. */
  finish (): void {
    this.push(null)
  }

  #resume (): void {
    const wake = this.#wake
    this.#wake = null
    wake?.()
  }
}

export class FileSpool implements TextSink {
  #handle: FileHandle | null

  private constructor (handle: FileHandle) {
    this.#handle = handle
  }

  /** A spool in a new file of the system's temporary folder, whose name is removed at once: nothing is left behind, whatever happens. */
  static async create (): Promise<FileSpool> {
    const dir = await mkdtemp(join(tmpdir(), 'storefront-spool-'))
    try {
      return new FileSpool(await open(join(dir, 'spool'), 'w+', 0o600))
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  async send (chunk: string | Buffer): Promise<void> {
    if (this.#handle === null) throw new SinkClosedError()
    if (typeof chunk === 'string') await this.#handle.write(chunk)
    else await this.#handle.write(chunk)
  }

  /** Everything sent, from its start, as a stream that closes the file when it ends or is destroyed. */
  readBack (): Readable {
    const handle = this.#take()
    return handle.createReadStream({ start: 0, highWaterMark: 64 * 1024 })
  }

  /** Closes the file; later sends fail. */
  async discard (): Promise<void> {
    if (this.#handle === null) return
    await this.#take().close()
  }

  #take (): FileHandle {
    const handle = this.#handle
    if (handle === null) throw new SinkClosedError()
    this.#handle = null
    return handle
  }
}
