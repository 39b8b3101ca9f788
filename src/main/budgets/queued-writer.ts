/** How soon rows the file could not take (busy) are written again. */
const RETRY_MS = 1000

/**
 * Rows for this machine's SQLite file that have no ledger batch to go with (the ledger is
 * PostgreSQL's): `write` takes them in order, in one transaction. When the file cannot take them
 * now (busy: another connection writing it, as `burnrate import` or a backup does; read-only) they
 * stay queued, in order, before any queued after them, and are tried again a moment later, at the
 * next `flush`, or at close. Used by the background holds (./background-holds.ts) and the key
 * patterns (./key-patterns.ts).
 */
export class QueuedWriter<T> {
  private pending: T[] = []
  private timer: NodeJS.Timeout | null = null
  private closed = false

  constructor(private readonly write: (rows: readonly T[]) => void) {}

  /** The rows not written yet, in order. */
  get queued(): readonly T[] {
    return this.pending
  }

  /** Hands over the rows not written yet, in order, and forgets them (a stop keeps them elsewhere). */
  take(): T[] {
    const rows = this.pending
    this.pending = []
    return rows
  }

  /** Queues rows after those still queued (written at the next `flush`). */
  add(rows: readonly T[]): void {
    for (const r of rows) this.pending.push(r)
  }

  /** Writes the rows queued; those the file cannot take now are kept, in order, and tried again in a moment. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.pending.length === 0) return
    const rows = this.pending
    this.pending = []
    try {
      this.write(rows)
    } catch {
      // busy or read-only now: kept, in order, and tried again in a moment, at the next flush or at close
      this.pending = rows.concat(this.pending)
      this.soon(RETRY_MS)
    }
  }

  /** Flushes `ms` from now, off the caller's turn (once: a flush already due stays as it is). */
  soon(ms: number): void {
    if (this.timer || this.closed) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.flush()
    }, ms)
    this.timer.unref()
  }

  /** Stops writing on its own (the server's close, after its last `flush`). */
  close(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.closed = true
  }
}
