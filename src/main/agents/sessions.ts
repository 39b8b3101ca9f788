import { randomBytes } from 'node:crypto'
import type { SqlReader } from '../storage/sql'

/** Calls of one agent and key further apart than this start a new session. */
export const SESSION_GAP_MS = 30 * 60 * 1000

interface Open {
  id: string
  last: number
}

/**
 * Sessions for calls whose client sends no session id: consecutive calls of one agent and one
 * API key less than 30 minutes apart form one session, named `auto-<12 hex>`. Kept in memory,
 * bounded (least recently used dropped first); `seed` picks up the sessions still open in the
 * ledger so a restart does not split them.
 */
export class SessionInference {
  private readonly open = new Map<string, Open>()
  /** The entry used last (so already last in the LRU order): a run of calls from one agent and key skips the map. */
  private newest: { agent: string; apiKeyHash: string; open: Open } | null = null

  constructor(
    private readonly gapMs = SESSION_GAP_MS,
    private readonly maxEntries = 10_000,
  ) {}

  /** The session of a call by `agent` with key `apiKeyHash` arriving at `ts` (ms). */
  assign(agent: string, apiKeyHash: string, ts: number): string {
    const n = this.newest
    if (n !== null && n.agent === agent && n.apiKeyHash === apiKeyHash && Math.abs(ts - n.open.last) < this.gapMs) {
      if (ts > n.open.last) n.open.last = ts
      return n.open.id
    }
    const k = `${agent}\u0000${apiKeyHash}`
    const cur = this.open.get(k)
    if (cur && Math.abs(ts - cur.last) < this.gapMs) {
      if (ts > cur.last) cur.last = ts
      this.open.delete(k)
      this.open.set(k, cur)
      this.newest = { agent, apiKeyHash, open: cur }
      return cur.id
    }
    const fresh: Open = { id: `auto-${randomBytes(6).toString('hex')}`, last: ts }
    this.put(k, fresh)
    this.newest = { agent, apiKeyHash, open: fresh }
    return fresh.id
  }

  /** The inferred session a call of `agent` with this key would join now, or null (tests, diagnostics). */
  current(agent: string, apiKeyHash: string, now = Date.now()): string | null {
    const cur = this.open.get(`${agent}\u0000${apiKeyHash}`)
    return cur && Math.abs(now - cur.last) < this.gapMs ? cur.id : null
  }

  /**
   * A call another instance stored (PostgreSQL's calls feed) in an inferred session of `agent`
   * and key: the latest call of the two is the session's, so calls of one agent behind a load
   * balancer stay one session (its `session_limit_usd` one cap), not one per instance.
   */
  observe(agent: string, apiKeyHash: string, session: string, last: number): void {
    if (!session.startsWith('auto-')) return
    const k = `${agent}\u0000${apiKeyHash}`
    const cur = this.open.get(k)
    if (cur && (cur.last > last || (cur.last === last && cur.id === session))) return
    if (cur?.id === session) cur.last = last
    else this.put(k, { id: session, last })
  }

  private put(k: string, v: Open): void {
    this.newest = null
    this.open.delete(k)
    this.open.set(k, v)
    while (this.open.size > this.maxEntries) {
      const oldest = this.open.keys().next().value as string
      this.open.delete(oldest)
    }
  }

  /**
   * Reopens the inferred sessions whose last call is less than the gap before `now` (the latest
   * session of each agent and key). A session a call has already been assigned to meanwhile is
   * kept: the store may answer after calls have begun to arrive (PostgreSQL). Never a session of a
   * call a team member's Burnrate sent (`origin_id` set): that Burnrate inferred it, on another machine.
   */
  async seed(store: SqlReader, now = Date.now()): Promise<void> {
    const rows = await store.all<{ agent: string; api_key_hash: string; session: string; last: number }>(
      `SELECT agent, api_key_hash, session, MAX(ts) AS last FROM calls
       WHERE ts > @since AND session LIKE 'auto-%' AND origin_id IS NULL GROUP BY agent, api_key_hash, session`,
      { since: now - this.gapMs },
    )
    const latest = new Map<string, { id: string; last: number }>()
    for (const r of rows) {
      const k = `${r.agent}\u0000${r.api_key_hash}`
      const cur = latest.get(k)
      if (!cur || r.last > cur.last || (r.last === cur.last && r.session > cur.id)) latest.set(k, { id: r.session, last: r.last })
    }
    // Oldest first, so the least recently used are dropped first when there are too many.
    for (const [k, v] of [...latest].sort((a, b) => a[1].last - b[1].last)) {
      if (!this.open.has(k)) this.put(k, v)
    }
  }

  get size(): number {
    return this.open.size
  }
}
