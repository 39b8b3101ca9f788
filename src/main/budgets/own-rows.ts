import type { CallRecord } from '../ledger/record'
import type { HistoryRow } from './meter-book'

/**
 * This instance's own calls the last read of the meters' calls does not hold (PostgreSQL mode:
 * counted after it began and missed by its snapshot, or counted since), as HISTORY_SQL's rows
 * (./shared-history.ts): a reload from the read's rows alone (a rule change, the shared rules'
 * first read) dropped them from the meters until the next read, and the call that crossed a
 * threshold with them was counted under it, its crossing then taken as announced by that read.
 * (Also what else the meters counted since that read, other instances' calls and cost moves: ./shared.ts `since`.)
 */
export class OwnRows {
  private rows = new Map<string, HistoryRow>()

  add(call: CallRecord): void {
    // Money only: a plan's (subscription) call has an API-equivalent value, not a cost (as HISTORY_SQL).
    const cost = call.billing === 'subscription' ? 0 : call.cost_usd
    this.addRow({ ...call, requested: call.requested_model ?? null, t: call.ts, cost, last: call.ts })
  }

  /** Money `cost` (negative: a cost moved down) of calls grouped as HISTORY_SQL groups them, arrived at `t` (its minute is theirs). */
  addRow(row: Omit<HistoryRow, 'tokens' | 'requests'>): void {
    const t = Math.floor(row.t / 60_000) * 60_000
    const id = rowId(row, t)
    const r = this.rows.get(id)
    if (r) {
      r.cost += row.cost
      r.last = Math.max(r.last, row.last)
      if (row.key_hint > r.key_hint) r.key_hint = row.key_hint
      return
    }
    this.rows.set(id, {
      api_key_hash: row.api_key_hash,
      key_hint: row.key_hint,
      provider: row.provider,
      model: row.model,
      requested: row.requested,
      agent: row.agent,
      tenant: row.tenant,
      session: row.session,
      t,
      cost: row.cost,
      tokens: 0,
      requests: 0,
      last: row.last,
    })
  }

  get empty(): boolean {
    return this.rows.size === 0
  }

  /** How many rows are kept (one per group and minute). */
  get size(): number {
    return this.rows.size
  }

  /**
   * `base` (a read's rows) with these added: each one's money goes into the rows of its group and
   * minute, summed as one (a move down takes off what they hold; Meter.add counts no negative
   * cost), and the others are added as rows of their own (those with money only).
   */
  over(base: readonly HistoryRow[]): HistoryRow[] {
    const out: HistoryRow[] = []
    const merged = new Map<string, HistoryRow>()
    for (const r of base) {
      // The last minute's counts (RECENT_SQL): no money.
      const id = r.tokens === 0 && r.requests === 0 ? rowId(r, r.t) : null
      const d = id === null ? undefined : this.rows.get(id)
      if (!d) {
        out.push(r)
        continue
      }
      const m = merged.get(id!)
      if (m) {
        m.cost += r.cost
        m.last = Math.max(m.last, r.last)
        if (r.key_hint > m.key_hint) m.key_hint = r.key_hint
      } else merged.set(id!, { ...r, cost: r.cost + d.cost, last: Math.max(r.last, d.last), key_hint: d.key_hint > r.key_hint ? d.key_hint : r.key_hint })
    }
    out.push(...merged.values())
    for (const [id, d] of this.rows) if (!merged.has(id) && d.cost > 0) out.push(d)
    return out
  }

  /** Forgets them all (a read's rows now hold them, or its missed calls are added again). */
  clear(): void {
    this.rows = new Map()
  }

  list(): HistoryRow[] {
    return [...this.rows.values()]
  }
}

/** A row's group and minute, as HISTORY_SQL groups the calls. */
function rowId(r: Pick<HistoryRow, 'api_key_hash' | 'provider' | 'model' | 'requested' | 'agent' | 'tenant' | 'session'>, t: number): string {
  return JSON.stringify([r.api_key_hash, r.provider, r.model, r.requested, r.agent, r.tenant, r.session, t])
}
