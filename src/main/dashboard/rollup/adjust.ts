import type { SqlStore } from '../../storage/sql'
import { FoldedDays } from './folded-days'
import { REPORT_TIERS, eachReportRow } from './report'
import { eachSessionRow } from './report-sessions'
import { FIVE_MIN, TIERS } from './schema'
import type { Dim, RollupInput } from './writer'

/**
 * Token counts a call's row moved by (a background response's estimate replaced by its real usage).
 * The rollups sum no reasoning tokens (adjustRollups ignores them); the metrics' token counters do.
 */
export type TokenChange = Partial<Record<'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'reasoning_tokens', number>>

/** A call whose cost changed by `delta` (re-priced; and its tokens by `tokens`, when they changed), with what the rollups group it by. */
export type CostChange = Pick<
  RollupInput,
  'ts' | 'provider' | 'model' | 'api_key_hash' | 'tenant' | 'agent' | 'session' | 'project' | 'billing' | 'member'
> & {
  delta: number
  tokens?: TokenChange
  /**
   * What its request counts move by: -1 for an imported call the proxy's record of the same
   * answer superseded (no longer a request; `imported` counts it no more either); -1 and then +1
   * for a call counted by other groupings now (re-classed, CostMoves.reclass), which a row that
   * does not exist yet is written with.
   */
  requests?: number
  /** Its source, when `requests` moves: an imported call's also moves the report rows' `imported`. */
  source?: string
}

const NO_TOKENS: TokenChange = {}

/**
 * Moves the rollups by the cost changes of calls they already include, so they stay equal to
 * what folding the changed calls afresh would give: a call billed per token moves `cost_usd`
 * of every rollup table it is in (the report rollup's days, months and session totals too); a subscription call
 * moves `plan_value_usd` of the hourly and daily totals. Token counts (`tokens`) move in every
 * table that sums them, whatever the billing (the writer folds every call's tokens). Runs inside the caller's transaction (the one that updates the calls), on either
 * store: each change is added in SQL, and rows are touched in one sorted order, so instances
 * adjusting the same rows at once neither lose a change nor deadlock.
 */
export async function adjustRollups(tx: SqlStore, changes: readonly CostChange[]): Promise<void> {
  // Summed per rollup row first: one UPDATE per touched row, of the columns that move.
  const sums = new Map<string, Entry>()
  const add = (key: string, table: string, where: string, params: Record<string, unknown>, cols: Record<string, number | undefined>, insert?: Insert) => {
    let e = sums.get(key)
    if (!e) sums.set(key, (e = { table, where, params, cols: new Map(), insert }))
    else if (insert?.counts) e.insert = insert
    for (const [col, v] of Object.entries(cols)) if (v) e.cols.set(col, (e.cols.get(col) ?? 0) + v)
  }
  const days = await FoldedDays.of(tx)
  // Sessions a call left (superseded): the times of the calls each lost, to find its times again.
  const left = new Map<string, SessionLeft>()
  for (const c of changes) {
    const t = c.tokens ?? NO_TOKENS
    if (!c.delta && !c.requests && !t.input_tokens && !t.output_tokens && !t.cache_read_tokens && !t.cache_write_tokens) continue
    const requests = c.requests
    // A call joining rows (re-classed): a row it is the first of is written, counting it.
    const joins = requests !== undefined && requests > 0
    const plan = c.billing === 'subscription'
    // Money: a subscription call's cost is its plan value, summed apart (and only in the totals).
    const money = plan ? 0 : c.delta
    const tokens = { input_tokens: t.input_tokens, output_tokens: t.output_tokens, cache_read_tokens: t.cache_read_tokens, cache_write_tokens: t.cache_write_tokens }
    // The report rollup (SQLite) sums every call's cost_usd, subscription calls' too.
    if (days) {
      const day = await days.dayOf(c)
      const who = { tenant: c.tenant, agent: c.agent, project: c.project ?? '', session: c.session }
      for (const [tier, period] of [[REPORT_TIERS.day, day], [REPORT_TIERS.month, days.monthOf(day)]] as const) {
        eachReportRow(who, (dim, tenant, key) =>
          add(
            `r${tier.col}\0${dim}\0${period}\0${tenant}\0${key}\0${c.model}\0${c.provider}`,
            tier.table,
            `dim = @dim AND ${tier.col} = @period AND tenant = @tenant AND key = @key AND model = @model AND provider = @provider`,
            { dim, period, tenant, key, model: c.model, provider: c.provider },
            { cost_usd: c.delta, ...tokens, requests, imported: c.source === 'import' ? requests : undefined },
            // The row as the folder writes it (its agent and project only on session rows), counting no call.
            reportRowInsert({
              dim, [tier.col]: period, tenant, key, model: c.model, provider: c.provider,
              agent: dim === 'session' ? who.agent : '', project: dim === 'session' ? who.project : '', requests: 0, imported: 0,
            }, joins),
          ),
        )
      }
      eachSessionRow(who, (across, tenant) =>
        add(`rs\0${across}\0${tenant}\0${c.session}`, 'dash_report_session', 'across = @across AND tenant = @tenant AND session = @session', {
          across, tenant, session: c.session,
        }, { cost_usd: c.delta }, { values: { across, tenant, session: c.session, first_ts: c.ts, last_ts: c.ts } }),
      )
    }
    const b5 = Math.floor(c.ts / FIVE_MIN) * FIVE_MIN
    add(`5\0${b5}\0${c.tenant}`, 'dash_5m', 'bucket = @bucket AND tenant = @tenant', { bucket: b5, tenant: c.tenant }, {
      cost_usd: money, input_tokens: t.input_tokens, output_tokens: t.output_tokens, requests,
    })
    TIERS.forEach((tier, i) => {
      const bucket = Math.floor(c.ts / tier.grain) * tier.grain
      add(`t${i}\0${bucket}\0${c.tenant}`, tier.totals, 'bucket = @bucket AND tenant = @tenant', { bucket, tenant: c.tenant }, {
        cost_usd: money, plan_value_usd: plan ? c.delta : 0, ...tokens, requests,
      })
      const dims: [Dim, string, string][] = [
        ['model', c.model, c.provider],
        ['provider', c.provider, ''],
        ['agent', c.agent, ''],
        ['session', c.session, ''],
        ['api_key', c.api_key_hash, ''],
        ['project', c.project ?? '', ''],
        ['member', c.member ?? '', ''],
      ]
      for (const [dim, key, provider] of dims) {
        add(
          `d${i}\0${dim}\0${bucket}\0${c.tenant}\0${key}\0${provider}`,
          tier.dims,
          'dim = @dim AND bucket = @bucket AND tenant = @tenant AND key = @key AND provider = @provider',
          { dim, bucket, tenant: c.tenant, key, provider },
          { cost_usd: money, ...tokens, requests },
          joins ? dimRowInsert({ dim, bucket, tenant: c.tenant, key, provider, key_hint: '' }) : undefined,
        )
      }
    })
    if (c.session !== '') {
      add(`s\0${c.tenant}\0${c.agent}\0${c.session}`, 'dash_session', 'tenant = @tenant AND agent = @agent AND session = @session', {
        tenant: c.tenant, agent: c.agent, session: c.session,
      }, { cost_usd: money, requests })
      if (requests && requests < 0) {
        const k = `${c.tenant}\0${c.agent}\0${c.session}`
        const l = left.get(k)
        if (!l) left.set(k, { tenant: c.tenant, agent: c.agent, session: c.session, first: c.ts, last: c.ts })
        else {
          l.first = Math.min(l.first, c.ts)
          l.last = Math.max(l.last, c.ts)
        }
      }
    }
  }
  for (const k of [...sums.keys()].sort()) {
    const e = sums.get(k)!
    const cols = [...e.cols].filter(([, v]) => v !== 0)
    if (cols.length === 0) continue
    const params: Record<string, unknown> = { ...e.params }
    for (const [col, v] of cols) params[`d_${col}`] = v
    const changed = await tx.run(`UPDATE ${e.table} SET ${cols.map(([col]) => `${col} = ${col} + @d_${col}`).join(', ')} WHERE ${e.where}`, params)
    if (changed === 0 && e.insert) {
      const moved = e.insert.counts ? cols : cols.filter(([col]) => !COUNTS.has(col))
      if (moved.length > 0) await insertRow(tx, e.table, e.insert, moved)
    }
  }
  for (const k of [...left.keys()].sort()) await sessionTimesLeft(tx, left.get(k)!)
}

/** A session some of whose calls are no longer requests (superseded), and the first and last time of those. */
interface SessionLeft {
  tenant: string
  agent: string
  session: string
  first: number
  last: number
}

/** The calls a session's row counts (as the writer folds them): not superseded, found by the calls_session_ts index. */
const SESSION_CALLS = 'FROM calls WHERE session = @session AND tenant = @tenant AND agent = @agent AND superseded_by IS NULL'

/**
 * A session's first and last time, when a call no longer a request (superseded: already marked in
 * this transaction) was its first or last: those of its calls left, as a rebuild of the rollups
 * (which leaves superseded calls out) has them. Otherwise the dashboard kept the call's time as the
 * session's started_at or last_seen_at, and counted it active with it. A session with no call left
 * to read (its others pruned, or none: at 0 requests it is no session) keeps its times.
 */
async function sessionTimesLeft(tx: SqlStore, s: SessionLeft): Promise<void> {
  const where = 'tenant = @tenant AND agent = @agent AND session = @session AND requests > 0'
  const keys = { tenant: s.tenant, agent: s.agent, session: s.session }
  await tx.run(`UPDATE dash_session SET last_ts = coalesce((SELECT max(ts) ${SESSION_CALLS} AND ts <= @at), last_ts) WHERE ${where} AND last_ts = @at`, { ...keys, at: s.last })
  await tx.run(`UPDATE dash_session SET first_ts = coalesce((SELECT min(ts) ${SESSION_CALLS} AND ts >= @at), first_ts) WHERE ${where} AND first_ts = @at`, { ...keys, at: s.first })
}

/**
 * The columns of a report row that a change may find missing, its sums but the changed ones 0;
 * `counts`: written with the change's requests too (a call joining the row: re-classed).
 */
interface Insert {
  values: Record<string, string | number>
  counts?: boolean
}

interface Entry {
  table: string
  where: string
  params: Record<string, unknown>
  cols: Map<string, number>
  insert?: Insert
}

/** A row's counts of calls: a row written by a change counts none (it moves money and tokens only). */
const COUNTS = new Set(['requests', 'imported'])

const REPORT_ROW_SUMS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cost_usd']

function reportRowInsert(keys: Record<string, string | number>, counts = false): Insert {
  const values: Record<string, string | number> = { ...keys }
  for (const s of REPORT_ROW_SUMS) values[s] = 0
  return { values, counts }
}

/** A grouping's row (`dash_dim_*`) a call joining it is the first of, as the writer writes it (its key's hint only on the api_key grouping, which a re-class never leaves). */
function dimRowInsert(keys: Record<string, string | number>): Insert {
  const values: Record<string, string | number> = { ...keys, requests: 0 }
  for (const s of REPORT_ROW_SUMS) values[s] = 0
  return { values, counts: true }
}

/**
 * A report row (day, month or session total) that a change found missing is written with the
 * change, so no re-priced dollar is dropped: a call's row is where the folder put it, or where an
 * earlier release put it (FoldedDays); should neither be there, the money shows in the row of the
 * day the call is now in, counting no call (no request moves there: no row there counted it).
 */
async function insertRow(tx: SqlStore, table: string, insert: Insert, cols: [string, number][]): Promise<void> {
  const values = { ...insert.values }
  for (const [col, v] of cols) values[col] = v
  const names = Object.keys(values)
  const changed = await tx.run(`INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`, values)
  if (changed !== 1) throw new Error(`re-pricing could not write a row of ${table}`)
}
