/**
 * Splits a JSON Lines body (a Batch API's results file) into its lines as the chunks pass, for
 * metering: each complete line goes to `onLine` once, as text; nothing is held but the line
 * still being read. A line longer than `maxLine` bytes is skipped whole (memory stays bounded
 * whatever the body), and a last line without its newline counts only when the body ended
 * (`end()`), not when it was cut.
 */
export class JsonLines {
  private part: Buffer[] = []
  private partSize = 0
  /** The current line grew past `maxLine`: its bytes are dropped until its newline. */
  private skipping = false
  /** Lines dropped for their length. */
  skipped = 0

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLine = 16 * 1024 * 1024,
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
    if (to <= from || this.skipping) return
    if (this.partSize + (to - from) > this.maxLine) {
      this.skipping = true
      this.part = []
      this.partSize = 0
      return
    }
    this.part.push(from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to))
    this.partSize += to - from
  }

  private emit(): void {
    if (this.skipping) {
      this.skipping = false
      this.skipped++
      return
    }
    if (this.partSize === 0) return
    const text = (this.part.length === 1 ? this.part[0] : Buffer.concat(this.part, this.partSize)).toString('utf8')
    this.part = []
    this.partSize = 0
    if (text.trim() !== '') this.onLine(text)
  }
}
