/**
 * At most `max` statements at a time; the rest wait here, in order. A burst of calls then queues
 * in this process rather than in the pool, whose wait for a connection times out (5 s).
 */
export class Limiter {
  private running = 0
  private readonly queue: (() => void)[] = []

  constructor(private readonly max: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((r) => this.queue.push(r))
    this.running++
    try {
      return await fn()
    } finally {
      this.running--
      this.queue.shift()?.()
    }
  }
}
