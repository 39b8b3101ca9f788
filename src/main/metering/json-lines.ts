import { PathPicker } from './path-picker'

/** What a meter needs of a line too long to hold whole (see JsonLines). */
export interface LongLines {
  /** The paths of the values it reads (PathPicker's: `$.a.b`, `*` any key). */
  paths: readonly string[]
  /** A long line's picked values, in the line's shape. */
  onObject(o: Record<string, unknown>): void
}

/** A line past this many bytes is also read by a PathPicker from then on (the bytes held so far fed at once: a few milliseconds). */
const PICK_FROM = 256 * 1024

/**
 * Splits a JSON Lines body (a Batch API's results file) into its lines as the chunks pass, for
 * metering: each complete line goes to `onLine` once, as text; nothing is held but the line
 * still being read, up to `maxLine` bytes. A longer line (an OpenAI batch's embeddings request of
 * a thousand inputs is tens of megabytes) is read as it passes by `long`'s PathPicker, started
 * once the line passes 256 KB, and its picked values go to `long.onObject`; without `long` it is
 * skipped whole (counted in `skipped`). Memory stays bounded whatever the body. A last line
 * without its newline counts only when the body ended (`end()`), not when it was cut.
 */
export class JsonLines {
  private part: Buffer[] = []
  private partSize = 0
  /** The current line grew past `maxLine`: its bytes are no longer held (only picked, with `long`). */
  private skipping = false
  /** The current line's picker, once it grew past PICK_FROM (with `long`). */
  private picker: PathPicker | null = null
  /** Lines dropped: too long to hold without `long`, or a long line that was not whole JSON. */
  skipped = 0

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLine = 16 * 1024 * 1024,
    private readonly long?: LongLines,
  ) {}

  push = (chunk: Buffer): void => {
    let from = 0
    for (;;) {
      const nl = chunk.indexOf(10, from)
      if (nl === -1) {
        this.keep(chunk, from, chunk.length)
        return
      }
      this.keep(chunk, from, nl)
      this.emit()
      from = nl + 1
    }
  }

  /** The body ended: its last line, if it had no newline, is a line too. */
  end(): void {
    this.emit()
  }

  private keep(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return
    const bytes = from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to)
    if (this.picker) this.picker.write(bytes)
    if (this.skipping) return
    if (this.partSize + bytes.length > this.maxLine) {
      this.skipping = true
      this.part = []
      this.partSize = 0
      return
    }
    this.part.push(bytes)
    this.partSize += bytes.length
    if (this.long && !this.picker && this.partSize > PICK_FROM) {
      this.picker = new PathPicker(this.long.paths)
      for (const p of this.part) this.picker.write(p)
    }
  }

  private emit(): void {
    const picker = this.picker
    this.picker = null
    if (this.skipping) {
      this.skipping = false
      const o = picker?.end()
      if (o) this.long!.onObject(o)
      else this.skipped++
      return
    }
    if (this.partSize === 0) return
    const text = (this.part.length === 1 ? this.part[0] : Buffer.concat(this.part, this.partSize)).toString('utf8')
    this.part = []
    this.partSize = 0
    if (text.trim() !== '') this.onLine(text)
  }
}
