/**
 * Non-streamed answers read on for their bill after their client left (./forward.ts), one set
 * per proxy: their calls are under way until they end, and a stop ends them (recorded 499 with
 * what came) rather than wait for an upstream that is slow to finish.
 */

export interface LeftAnswer {
  /** Ends the answer's call now (recorded with what came) and stops its upstream exchange. */
  stop(): void
}

export class LeftAnswers {
  private readonly answers = new Set<LeftAnswer>()

  add(a: LeftAnswer): void {
    this.answers.add(a)
  }

  delete(a: LeftAnswer): void {
    this.answers.delete(a)
  }

  /** Ends every answer still being read. */
  stopAll(): void {
    for (const a of [...this.answers]) a.stop()
  }
}
