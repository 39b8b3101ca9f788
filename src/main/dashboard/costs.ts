import { type CostRow, type Costs, type GroupBy, LIST_LIMIT_DEFAULT, type Range } from '../../shared/api'
import type { DashDeps } from './deps'
import { isGroup } from './groups'
import { TIERS } from './rollup/schema'
import { andMember, andTenant, bytewise, MONEY, REQUESTS_ONLY, total } from './sql'
import { unpricedBy } from './unpriced-counts'
import { rangeWindow, splitTiers, type Window } from './window'

/** The `calls` column each grouping reads. */
const COLUMN: Record<GroupBy, string> = {
  model: 'model',
  provider: 'provider',
  agent: 'agent',
  session: 'session',
  api_key: 'api_key_hash',
  tenant: 'tenant',
  project: 'project',
  member: 'member',
}

const COLS = 'requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd'

interface Part {
  key: string
  provider: string
  key_hint: string
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
}

/** Spend in the window grouped by one attribute, costliest first. */
export async function costs(
  d: DashDeps, groupBy: GroupBy, range: Range, tenant: string | null, now: number, limit = LIST_LIMIT_DEFAULT, member: string | null = null,
): Promise<Costs> {
  const w = rangeWindow(range, now)
  // The rollups are not kept per member: one member's costs are summed from its calls (exact).
  const { rolled, raw } = member === null ? splitTiers(w, TIERS) : { rolled: [], raw: [w] }
  const byModel = groupBy === 'model'
  const args = (x: Window) => ({ start: x.start, end: x.end, tenant, dim: groupBy, member })
  const parts: Part[] = []
  // Rolled rows are few (a day or hour each per key); summing them here beats a GROUP BY's temp B-tree.
  for (const { tier, window } of rolled) {
    const sql =
      groupBy === 'tenant'
        ? `SELECT tenant AS key, '' AS provider, '' AS key_hint, ${COLS}
             FROM ${tier.totals} WHERE bucket >= @start AND bucket < @end${andTenant(tenant)}`
        : `SELECT key, provider, key_hint, ${COLS}
             FROM ${tier.dims} WHERE dim = @dim AND bucket >= @start AND bucket < @end${andTenant(tenant)}`
    for (const p of await d.q.all<Part>(sql, args(window))) parts.push(p)
  }
  for (const r of raw) {
    const col = COLUMN[groupBy]
    const provider = byModel ? 'provider' : "''"
    const sql = `SELECT ${col} AS key, ${provider} AS provider, max(${bytewise(d.q, 'key_hint')}) AS key_hint, count(*) AS requests,
        ${total('input_tokens')} AS input_tokens, ${total('output_tokens')} AS output_tokens,
        ${total('cache_read_tokens')} AS cache_read_tokens, ${total('cache_write_tokens')} AS cache_write_tokens,
        ${total(MONEY)} AS cost_usd
      FROM calls WHERE ts >= @start AND ts < @end${REQUESTS_ONLY}${andTenant(tenant)}${andMember(member)} GROUP BY 1, 2`
    for (const p of await d.q.all<Part>(sql, args(r))) parts.push(p)
  }
  // Calls of no known price, counted as $0 in cost_usd: read from the calls (./unpriced-counts.ts).
  const unpriced = await unpricedBy(d.q, w, COLUMN[groupBy], byModel, tenant, member)
  const rows = new Map<string, CostRow>()
  for (const p of parts) {
    const id = p.key + '\0' + p.provider
    let row = rows.get(id)
    if (!row) {
      row = {
        key: p.key,
        provider: byModel ? p.provider : null,
        requests: 0,
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: 0,
        unpriced_requests: unpriced.get(id) ?? 0,
      }
      if (groupBy === 'api_key') row.key_hint = p.key_hint
      rows.set(id, row)
    } else if (row.key_hint !== undefined && p.key_hint > row.key_hint) row.key_hint = p.key_hint
    row.requests += p.requests
    row.input_tokens += p.input_tokens
    row.output_tokens += p.output_tokens
    row.cache_read_tokens += p.cache_read_tokens
    row.cache_write_tokens += p.cache_write_tokens
    row.cost_usd += p.cost_usd
  }
  // A group whose only calls were superseded imported ones is none (./groups.ts): its rollup rows stay at 0 requests and $0.
  const sorted = [...rows.values()].filter(isGroup).sort(
    (a, b) => b.cost_usd - a.cost_usd || b.requests - a.requests || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  )
  return { group_by: groupBy, range, rows: foldRest(sorted, limit), total_rows: sorted.length }
}

/** The key of the row that sums every group past the limit. */
export const OTHER_KEY = '(other)'

/**
 * The first `limit` rows, then one `other` row summing the rest (so the rows still add up to the
 * spend). Its models are of several providers: its `provider` is null, as on a row of no model.
 */
function foldRest(sorted: CostRow[], limit: number): CostRow[] {
  if (sorted.length <= limit) return sorted
  const top = sorted.slice(0, limit)
  const other: CostRow = {
    key: OTHER_KEY,
    provider: null,
    requests: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cost_usd: 0,
    unpriced_requests: 0,
    other: true,
  }
  for (let i = limit; i < sorted.length; i++) {
    const r = sorted[i]
    other.requests += r.requests
    other.input_tokens += r.input_tokens
    other.output_tokens += r.output_tokens
    other.cache_read_tokens += r.cache_read_tokens
    other.cache_write_tokens += r.cache_write_tokens
    other.cost_usd += r.cost_usd
    other.unpriced_requests += r.unpriced_requests
  }
  top.push(other)
  return top
}
