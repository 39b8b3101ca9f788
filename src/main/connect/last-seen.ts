import type { CallNotices } from '../ledger/notices'
import type { CallRecord } from '../ledger/record'
import type { SqlReader } from '../storage/sql'

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * When each agent's last call arrived, through the proxy and from its own logs (imported calls),
 * kept in memory as calls are recorded. Seeded from the last `seedDays` of the ledger (the `ts`
 * index bounds the scan) the first time it is asked, through the SQL seam: on PostgreSQL it sees
 * the calls of every instance on the database.
 */
export class LastSeen {
  private readonly proxy = new Map<string, number>()
  private readonly imported = new Map<string, number>()
  private seeding: Promise<void> | null = null

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

  /** Seeds from the ledger once (started the first time it is asked); resolves when that is done, or failed. */
  seeded(): Promise<void> {
    this.seeding ??= this.seed()
    return this.seeding
  }

  private async seed(): Promise<void> {
    if (!this.store) return
    try {
      const rows = await this.store.all<{ agent: string; source: string; ts: number }>(
        "SELECT agent, source, MAX(ts) AS ts FROM calls WHERE ts >= @since AND agent <> '' GROUP BY agent, source",
        { since: Date.now() - this.seedDays * DAY_MS },
      )
      // Calls observed meanwhile are kept: the latest of both wins.
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
