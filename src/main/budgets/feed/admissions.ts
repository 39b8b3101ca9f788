import type { SqlStore } from '../../storage/sql'
import type { Scope } from '../scope'
import { type AdmissionRow, notifyNow, notifyPayloads } from './publish'

/**
 * PostgreSQL: a per-minute request limit is one limit across the instances at the moment calls
 * are admitted, not only once they are stored (an LLM call lasts seconds to minutes, most of a
 * limit's minute). Each call admitted under a rule with `requests_per_minute` is told to the
 * other instances on the calls feed's channel right away: those of the next 2 ms gathered into
 * one statement, outside any transaction, never awaited by the call. The listeners
 * add them to the rule's last-minute count (SharedCounts.observeAdmissions); the call carries
 * `rate_announced`, so that the notification of its storing does not count it again. A
 * notification that cannot be sent (PostgreSQL away) is lost: those calls then count on the
 * other instances from their storing only, as before.
 */
/** Admissions gathered into one statement: at hundreds of calls a second, one statement per few ms, not per call. */
const GATHER_MS = 2
/** Rows per notify batch: well within notifyPayloads' 64 notifications of 7.9 KB. */
const ROWS_PER_STATEMENT = 200

function groupOf(hash: string, scope: Scope): string {
  return `${hash}\u0000${scope.provider}\u0000${scope.model}\u0000${scope.agent}\u0000${scope.tenant}`
}

export class AdmissionAnnouncer {
  private queued = new Map<string, AdmissionRow>()
  private scheduled = false
  private closed = false

  constructor(
    private readonly store: SqlStore,
    private readonly feedId: string,
  ) {}

  /** One call admitted now for key `hash` under `scope` (the engine's `onAdmitted`). */
  add = (hash: string, scope: Scope, known: readonly string[]): void => {
    if (this.closed) return
    const group = groupOf(hash, scope)
    const row = this.queued.get(group)
    if (row) row[5]++
    else this.queued.set(group, [hash, scope.provider, scope.model, scope.agent, scope.tenant, 1, [...known]])
    if (!this.scheduled) {
      this.scheduled = true
      setTimeout(this.flush, GATHER_MS).unref()
    }
  }

  /**
   * An admission told to `add` whose call was not sent after all (another of its keys refused):
   * taken back while it waits here; once sent, the other instances count it for its minute.
   */
  withdraw = (hash: string, scope: Scope): void => {
    const group = groupOf(hash, scope)
    const row = this.queued.get(group)
    if (row && --row[5] <= 0) this.queued.delete(group)
  }

  private flush = (): void => {
    this.scheduled = false
    const rows = [...this.queued.values()]
    this.queued.clear()
    if (rows.length === 0 || this.closed) return
    const payloads: string[] = []
    for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
      // A row too long for a notification (a model name of kilobytes): its storing counts it.
      payloads.push(...(notifyPayloads(this.feedId, rows.slice(i, i + ROWS_PER_STATEMENT), 'a') ?? []))
    }
    if (payloads.length > 0) notifyNow(this.store, payloads).catch(() => {})
  }

  close(): void {
    this.closed = true
    this.queued.clear()
  }
}
