import type { CallNotices } from '../ledger/notices'
import type { CallRecord } from '../ledger/record'
import type { SqlReader } from '../storage/sql'

const DAY_MS = 24 * 60 * 60 * 1000
/** On PostgreSQL, how old a read may be before the next question reads what was stored since. */
export const SHARED_REFRESH_MS = 5_000
/**
 * How long before a read a call may have arrived and not be stored yet (its `ts` is when it
 * arrived): a long stream, a batch waiting to be written. The refresh reads back this far.
 */
const STORE_LAG_MS = 60 * 60 * 1000

/**
 * When each agent's last call arrived, through the proxy and from its own logs (imported calls),
 * kept in memory as calls are recorded. Seeded from the last `seedDays` of the ledger (the `ts`
 * index bounds the scan) the first time it is asked, through the SQL seam: on PostgreSQL it sees
 * the calls of every instance on the database, and since other instances go on storing calls there,
 * a question more than SHARED_REFRESH_MS after the last read reads again what was stored since
 * (by the `ts` index: the calls since the latest one seen).
 */
export class LastSeen {
  private readonly proxy = new Map<string, number>()
  private readonly imported = new Map<string, number>()
  private seeding: Promise<void> | null = null
  /** When the last read began, and the latest call it could have missed (PostgreSQL's refresh reads from there). */
  private readAt = 0
  private readFrom = 0

  /** `store`: the ledger (`ctx.store`: the SQLite file, or PostgreSQL with `storage.url`). */
  constructor(
    private readonly store: SqlReader | null,
    private readonly seedDays = 30,
  ) {}

  observe(call: Pick<CallRecord, 'agent' | 'ts' | 'source'>): void {
    if (!call.agent) return
    const map = call.source === 'import' ? this.imported : this.proxy
    if ((map.get(call.agent) ?? 0) < call.ts) map.set(call.agent, call.ts)
  }

  /**
   * Observes the calls other processes store in the SQLite file from now on (`burnrate import`
   * beside this server): they reach this server as call notices, never through `ledger.onCall`.
   * From notice `through` on; an earlier one's call is in the ledger the seed reads (the latest
   * wins, so a call seen both ways counts once). Returns what stops it.
   */
  follow(notices: CallNotices, through: number): () => void {
    return notices.read({
      through,
      take: (calls) => {
        for (const c of calls) this.observe(c)
      },
    })
  }

  /** Seeds from the ledger (started the first time it is asked; on PostgreSQL read again when the last read is older than SHARED_REFRESH_MS); resolves when that is done, or failed. */
  seeded(): Promise<void> {
    const shared = this.store?.dialect === 'postgres'
    if (!this.seeding || (shared && Date.now() - this.readAt > SHARED_REFRESH_MS)) {
      const before = this.seeding ?? Promise.resolve()
      // A refresh reads from the start of the last read, less a call's longest wait to be stored.
      const since = this.seeding ? this.readFrom : Date.now() - this.seedDays * DAY_MS
      this.readAt = Date.now()
      this.readFrom = this.readAt - STORE_LAG_MS
      this.seeding = before.then(() => this.seed(since))
    }
    return this.seeding
  }

  private async seed(since: number): Promise<void> {
    if (!this.store) return
    try {
      const rows = await this.store.all<{ agent: string; source: string; ts: number }>(
        "SELECT agent, source, MAX(ts) AS ts FROM calls WHERE ts >= @since AND agent <> '' AND origin_id IS NULL GROUP BY agent, source",
        { since },
      )
      // Calls observed meanwhile are kept: the latest of both wins. (Not a team member's calls,
      // `origin_id` set: its agents called through its own Burnrate, not this one.)
      for (const r of rows) this.observe({ agent: r.agent, ts: Number(r.ts), source: r.source === 'import' ? 'import' : 'proxy' })
    } catch {
      // an older ledger without `source`, or the store is away: the calls recorded from now on still count
    }
  }

  /** The latest call of any of `agents` (ISO), through the proxy and from logs (await `seeded()` first for the ledger's). */
  of(agents: readonly string[]): { last_call_at: string | null; last_import_at: string | null } {
    void this.seeded()
    const latest = (m: Map<string, number>) => {
      const t = Math.max(0, ...agents.map((a) => m.get(a) ?? 0))
      return t > 0 ? new Date(t).toISOString() : null
    }
    return { last_call_at: latest(this.proxy), last_import_at: latest(this.imported) }
  }
}
