import type { SqlStore } from '../../storage/sql'
import type { Scope } from '../scope'
import type { AdmissionNotice } from './admission-told'
import { type AdmissionRow, notifyNow, notifyPayloads } from './publish'

/**
 * PostgreSQL: a per-minute request limit is one limit across the instances at the moment calls
 * are admitted, not only once they are stored (an LLM call lasts seconds to minutes, most of a
 * limit's minute). Each call admitted under a rule with `requests_per_minute` is told to the
 * other instances on the calls feed's channel right away: those of the next 2 ms gathered into
 * one statement, outside any transaction, never awaited by the call. The listeners
 * add them to the rule's last-minute count (SharedCounts.observeAdmissions); the call carries
 * `rate_announced`, so that the notification of its storing does not count it again. A
 * notification that cannot be sent (PostgreSQL away, a row too long) is lost: those calls then
 * count on the other instances from their storing (their `AdmissionNotice` is marked lost; builds
 * before this one counted them nowhere).
 */
/** Admissions gathered into one statement: at hundreds of calls a second, one statement per few ms, not per call. */
const GATHER_MS = 2
/** Rows per notify batch: well within notifyPayloads' 64 notifications of 7.9 KB. */
const ROWS_PER_STATEMENT = 200

function groupOf(hash: string, scope: Scope): string {
  return `${hash}\u0000${scope.provider}\u0000${scope.model}\u0000${scope.agent}\u0000${scope.tenant}`
}

export class AdmissionAnnouncer {
  private queued = new Map<string, { row: AdmissionRow; told: AdmissionNotice }>()
  private scheduled = false
  private closed = false

  constructor(
    private readonly store: SqlStore,
    private readonly feedId: string,
  ) {}

  /** One call admitted now for key `hash` under `scope` (the engine's `onAdmitted`); what tells whether the others were told of it. */
  add = (hash: string, scope: Scope, known: readonly string[]): AdmissionNotice => {
    if (this.closed) return { lost: true }
    const group = groupOf(hash, scope)
    const queued = this.queued.get(group)
    if (queued) {
      queued.row[5]++
      return queued.told
    }
    const told = { lost: false }
    this.queued.set(group, { row: [hash, scope.provider, scope.model, scope.agent, scope.tenant, 1, [...known]], told })
    if (!this.scheduled) {
      this.scheduled = true
      setTimeout(this.flush, GATHER_MS).unref()
    }
    return told
  }

  /**
   * An admission told to `add` whose call was not sent after all (another of its keys refused):
   * taken back while it waits here; once sent, the other instances count it for its minute.
   */
  withdraw = (hash: string, scope: Scope): void => {
    const group = groupOf(hash, scope)
    const queued = this.queued.get(group)
    if (queued && --queued.row[5] <= 0) this.queued.delete(group)
  }

  private flush = (): void => {
    this.scheduled = false
    const queued = [...this.queued.values()]
    this.queued.clear()
    if (queued.length === 0) return
    if (this.closed) return lose(queued)
    const payloads: string[] = []
    const sent: typeof queued = []
    for (let i = 0; i < queued.length; i += ROWS_PER_STATEMENT) {
      const chunk = queued.slice(i, i + ROWS_PER_STATEMENT)
      const p = notifyPayloads(this.feedId, chunk.map((q) => q.row), 'a')
      // A row too long for a notification (a model name of kilobytes): its storing counts it.
      if (!p) lose(chunk)
      else {
        payloads.push(...p)
        sent.push(...chunk)
      }
    }
    if (payloads.length > 0) notifyNow(this.store, payloads).catch(() => lose(sent))
  }

  close(): void {
    this.closed = true
    lose([...this.queued.values()])
    this.queued.clear()
  }
}

/** Admissions the other instances were not told of: their calls' storing counts them there. */
function lose(queued: readonly { told: AdmissionNotice }[]): void {
  for (const q of queued) q.told.lost = true
}
