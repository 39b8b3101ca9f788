import { TIERS } from './rollup/schema'
import type { SqlReader } from '../storage/sql'
import { andTenant, countIf, MONEY, PLAN_VALUE, REQUESTS_ONLY, total } from './sql'
import { splitTiers, type Window } from './window'

export interface Totals {
  requests: number
  failed: number
  errors_429: number
  errors_5xx: number
  cost_usd: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  latency_ms: number
  /** API-equivalent value of subscription calls (not in `cost_usd`, which is money). */
  plan_value_usd: number
}

const SUMS = `count(*) AS requests, ${countIf('status >= 400')} AS failed, ${countIf('status = 429')} AS errors_429,
  ${countIf('status BETWEEN 500 AND 599')} AS errors_5xx, ${total(MONEY)} AS cost_usd,
  ${total('input_tokens')} AS input_tokens, ${total('output_tokens')} AS output_tokens,
  ${total('cache_read_tokens')} AS cache_read_tokens, ${total('cache_write_tokens')} AS cache_write_tokens,
  ${total('latency_ms')} AS latency_ms, ${total(PLAN_VALUE)} AS plan_value_usd`

const ROLLED = `${total('requests')} AS requests, ${total('failed')} AS failed, ${total('errors_429')} AS errors_429,
  ${total('errors_5xx')} AS errors_5xx, ${total('cost_usd')} AS cost_usd, ${total('input_tokens')} AS input_tokens,
  ${total('output_tokens')} AS output_tokens, ${total('cache_read_tokens')} AS cache_read_tokens,
  ${total('cache_write_tokens')} AS cache_write_tokens, ${total('latency_ms')} AS latency_ms, ${total('plan_value_usd')} AS plan_value_usd`

export function emptyTotals(): Totals {
  return {
    requests: 0, failed: 0, errors_429: 0, errors_5xx: 0, cost_usd: 0, input_tokens: 0, output_tokens: 0,
    cache_read_tokens: 0, cache_write_tokens: 0, latency_ms: 0, plan_value_usd: 0,
  }
}

function add(into: Totals, t: Totals): void {
  for (const k of Object.keys(into) as (keyof Totals)[]) into[k] += t[k] ?? 0
}

/** Every total of the calls in `w` (of one tenant, or all): whole days and hours from the rollups, the edges from `calls`. */
export async function windowTotals(q: SqlReader, w: Window, tenant: string | null): Promise<Totals> {
  const out = emptyTotals()
  const { rolled, raw } = splitTiers(w, TIERS)
  for (const { tier, window } of rolled) {
    const sql = `SELECT ${ROLLED} FROM ${tier.totals} WHERE bucket >= @start AND bucket < @end${andTenant(tenant)}`
    add(out, (await q.get<Totals>(sql, { start: window.start, end: window.end, tenant }))!)
  }
  for (const r of raw) {
    const sql = `SELECT ${SUMS} FROM calls WHERE ts >= @start AND ts < @end${REQUESTS_ONLY}${andTenant(tenant)}`
    add(out, (await q.get<Totals>(sql, { start: r.start, end: r.end, tenant }))!)
  }
  return out
}
