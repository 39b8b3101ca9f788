/**
 * The upstream's silence on a Responses socket, timed as an HTTP call's is (../call/deadlines.ts):
 * from a response asked for to its first frame (`first_byte_timeout_ms`), then between frames
 * (`idle_timeout_ms`). Only while a response is open: a socket between turns is quiet by right.
 * Nor while the relay holds the upstream back for a client that reads slowly (`paused`): that
 * silence is the client's. One timer per socket, refreshed by each upstream frame only: a client
 * that keeps talking (a microphone streaming `input_audio_buffer.append` or `realtimeInput`
 * audio) says nothing of whether the upstream still answers.
 */
export class SilenceWatch {
  private timer: NodeJS.Timeout | null = null
  private armedMs = 0

  constructor(
    private readonly limits: { first_byte_timeout_ms: number; idle_timeout_ms: number },
    /** What is open: none (no response open), `waiting` (asked, no frame yet), `streaming`. */
    private readonly state: () => 'none' | 'waiting' | 'streaming',
    /** Whether the relay holds the upstream back (a slow client). */
    private readonly paused: () => boolean,
    /** The upstream has been silent too long: `started` says whether the response had begun. */
    private readonly onSilent: (started: boolean) => void,
  ) {}

  /**
   * After each client frame passed on: starts timing when it asked for a response (none was timed
   * before), and leaves a timer already running as it was, since the upstream's silence goes on.
   */
  afterClient(): void {
    if (this.timer) {
      if (this.state() === 'none') this.stop()
      return
    }
    this.check()
  }

  /** After each upstream frame (and a pause held for the client): times the silence that follows. */
  check(): void {
    const st = this.state()
    if (st === 'none') return this.stop()
    const ms = st === 'waiting' ? this.limits.first_byte_timeout_ms : this.limits.idle_timeout_ms
    if (this.timer && this.armedMs === ms) {
      this.timer.refresh()
      return
    }
    this.stop()
    this.armedMs = ms
    this.timer = setTimeout(this.fire, ms)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }

  private readonly fire = (): void => {
    this.timer = null
    const st = this.state()
    if (st === 'none') return
    // Held back for the client: its silence is not the upstream's.
    if (this.paused()) return this.check()
    this.onSilent(st === 'streaming')
  }
}
