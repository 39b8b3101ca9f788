import type Database from 'better-sqlite3'
import type { CallRecord } from '../ledger/record'

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * When each agent's last call arrived, through the proxy and from its own logs (imported calls),
 * kept in memory as calls are recorded. Seeded from the last `seedDays` of the ledger (the `ts`
 * index bounds the scan) the first time it is asked.
 */
export class LastSeen {
  private readonly proxy = new Map<string, number>()
  private readonly imported = new Map<string, number>()
  private seeded = false

  constructor(
    private readonly db: Database.Database | null,
    private readonly seedDays = 30,
  ) {}

  observe(call: Pick<CallRecord, 'agent' | 'ts' | 'source'>): void {
    if (!call.agent) return
    const map = call.source === 'import' ? this.imported : this.proxy
    if ((map.get(call.agent) ?? 0) < call.ts) map.set(call.agent, call.ts)
  }

  private seed(): void {
    if (this.seeded || !this.db) return
    this.seeded = true
    try {
      const rows = this.db
        .prepare("SELECT agent, source, MAX(ts) AS ts FROM calls WHERE ts >= ? AND agent != '' GROUP BY agent, source")
        .all(Date.now() - this.seedDays * DAY_MS) as { agent: string; source: string; ts: number }[]
      for (const r of rows) this.observe({ agent: r.agent, ts: r.ts, source: r.source === 'import' ? 'import' : 'proxy' })
    } catch {
      // an older ledger without `source`: the calls recorded from now on still count
    }
  }

  /** The latest call of any of `agents` (ISO), through the proxy and from logs. */
  of(agents: readonly string[]): { last_call_at: string | null; last_import_at: string | null } {
    this.seed()
    const latest = (m: Map<string, number>) => {
      const t = Math.max(0, ...agents.map((a) => m.get(a) ?? 0))
      return t > 0 ? new Date(t).toISOString() : null
    }
    return { last_call_at: latest(this.proxy), last_import_at: latest(this.imported) }
  }
}
