/**
 * The text of a response that carries no usage, kept for estimating its tokens. A response
 * can be of any size (a runaway or hostile stream of hundreds of MB), so only the first
 * `MAX_CHARS` characters are kept (2M characters of prose is ~500k tokens, more than any model
 * emits in one response; degenerate output, a run of `=`, can be longer), and small pieces are
 * joined as they come, so memory stays flat. The rest is only counted: `scale` says how much
 * longer the whole text was than the part kept, so the estimate extrapolates to the whole
 * rather than stopping at the bound.
 * Drop-in for the `string[]` the meters used: `push` and `join`.
 */
export class OutputText {
  static MAX_CHARS = 2_000_000
  private parts: string[] = []
  private size = 0
  /** Characters seen beyond the bound, not kept. */
  dropped = 0

  push(text: string): void {
    const room = OutputText.MAX_CHARS - this.size
    if (text.length > room) {
      this.dropped += text.length - Math.max(room, 0)
      if (room <= 0) return
      text = text.slice(0, room)
    }
    this.parts.push(text)
    this.size += text.length
    if (this.parts.length >= 4096) this.parts = [this.parts.join('')]
  }

  /** The whole text's length over the kept part's (MeterResult.outputScale), or undefined when nothing was dropped. */
  get scale(): number | undefined {
    return this.dropped > 0 && this.size > 0 ? (this.size + this.dropped) / this.size : undefined
  }

  join(sep = ''): string {
    return this.parts.join(sep)
  }

  get length(): number {
    return this.parts.length
  }
}
