import type { LedgerStatus } from './types'

/**
 * The SQLite ledger's write state, as /api/health, the metrics and the log read it (`status`):
 * whether the database takes writes and why not, the calls dropped (and of those, past
 * `maxPending`), those that left memory but are in the journal; and how long the next try waits
 * after a refusal (0.1 s, doubling up to 5 s).
 */
export class WriteHealth {
  readonly status: LedgerStatus = { writable: true, pending: 0, dropped: 0, last_error: null }
  /** The wait before the next try (0: no write has failed since the last that succeeded). */
  retryMs = 0

  /** A write succeeded: writable again, no error, no wait. */
  wrote(): void {
    this.status.writable = true
    this.status.last_error = null
    this.retryMs = 0
  }

  /** A write failed or left rows behind: returns the wait before the next try, longer each time. */
  backOff(): number {
    this.retryMs = Math.min(Math.max(this.retryMs * 2, 100), 5000)
    return this.retryMs
  }

  /**
   * `gone` calls left memory past `maxPending`: those the journal holds (`onDisk`) are not lost (the
   * next start stores them). Of those, `inFlight` are in the append under way: in the total (the
   * metrics' counter, which never goes down) only once it has put them on disk (`nowOnDisk`).
   */
  leftMemory(gone: number, onDisk: number, inFlight = 0): void {
    if (onDisk > 0) {
      // Stored only at the next start (the journal is kept for it): they stay counted until then.
      this.status.left_on_disk = (this.status.left_on_disk ?? 0) + onDisk
      this.status.left_on_disk_total = (this.status.left_on_disk_total ?? 0) + onDisk - inFlight
    }
    this.status.dropped += gone - onDisk
    this.status.overflowed = (this.status.overflowed ?? 0) + gone - onDisk
  }

  /** `n` calls that left memory while the append holding them was under way are on disk: it has ended with them in the file. */
  nowOnDisk(n: number): void {
    this.status.left_on_disk_total = (this.status.left_on_disk_total ?? 0) + n
  }

  /** `n` calls counted on disk when they left memory were not after all (an append that held them failed). */
  notOnDisk(n: number): void {
    this.status.left_on_disk = Math.max(0, (this.status.left_on_disk ?? 0) - n)
    this.status.dropped += n
    this.status.overflowed = (this.status.overflowed ?? 0) + n
  }
}

/** An error's text for the status and the log: its code and message. */
export function describe(err: unknown): string {
  const e = err as { code?: string; message?: string }
  return e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)
}
