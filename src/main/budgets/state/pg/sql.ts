import type { SqlParams } from '../../../storage/sql'
import type { PeriodState } from '../../meter'
import { hashKey } from '../../../proxy/attribution'
import { isPrefix } from '../../pattern'
import type { Rule } from '../../rules'

/** The database's clock in ms (leases and row creation use it, never an instance's clock). */
export const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

/** What is left of a reservation after float subtraction, counted as nothing reserved. */
export const EPS = 1e-12

const ruleKeys = new WeakMap<Rule, string>()

/**
 * The identity of a rule's spend: its key pattern and scope (limits can change without losing
 * spend). A whole key is named by its hash (`sha256:<hex>`, PostgreSQL migration 18): the rows
 * are in the shared database, and a config rule's key is written in the config alone.
 */
export function ruleKey(r: Rule): string {
  let k = ruleKeys.get(r)
  if (k === undefined) {
    const p = r.api_key_pattern
    k = JSON.stringify([isPrefix(p) ? p : `sha256:${hashKey(p)}`, r.provider, r.model_pattern, r.agent, r.tenant])
    ruleKeys.set(r, k)
  }
  return k
}

/**
 * The start of the rule key of every rule of `r`'s key pattern (`["<pattern>",`), whatever its
 * scope: the rows of the rule as it was before an edit of its scope are found by it.
 */
export function rulePatternPrefix(r: Rule): string {
  return `${JSON.stringify([(JSON.parse(ruleKey(r)) as string[])[0]]).slice(0, -1)},`
}

/** One spend row's identity in this instance's caches: rule, key, period (by its start, a session by its id). */
export function rowKey(rk: string, hash: string, p: PeriodState, session: string): string {
  return `${rk}\u0000${hash}\u0000${p.period}\u0000${spendStart(p)}\u0000${p.period === 'session' ? session : ''}`
}

/**
 * A spend row's `period_start`: a calendar period's start, 0 for a session, and for a rolling
 * window its length in ms (whole ms), so that a rule whose window length changes starts a new
 * row (the rule key leaves limits out on purpose).
 */
export function spendStart(p: PeriodState): number {
  if (p.period === 'session') return 0
  if (p.period === 'window') return Math.round(windowLength(p))
  return p.start
}

/** A window period's length in ms (the Meter gives it; `start` is now minus the length). */
export function windowLength(p: PeriodState): number {
  if (p.lengthMs === undefined) throw new Error('a window period without its length')
  return p.lengthMs
}

/**
 * Binds period `i` of a call as `@p<i>` (period), `@s<i>` (its start; 0 for a session, the length for a window) and
 * `@n<i>` (the session's id; '' for a calendar period): the columns a spend row is found by.
 */
export function bindPeriod(params: SqlParams, i: number, p: PeriodState, session: string): void {
  params[`p${i}`] = p.period
  params[`s${i}`] = spendStart(p)
  params[`n${i}`] = p.period === 'session' ? session : ''
}

function likePrefix(p: string): string {
  return p.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`) + '%'
}

/**
 * SQL conditions on `calls` for a rule's scope (the engine's scopeMatches, in SQL): the model
 * pattern matches the recorded model or the one the call requested (`requested_model`, NULL when
 * the same or unknown).
 */
export function scopeSql(r: Rule, params: SqlParams): string {
  const out: string[] = []
  const add = (cols: readonly string[], pattern: string | null, name: string) => {
    if (pattern === null) return
    let conds: string[]
    if (pattern.endsWith('*')) {
      params[name] = likePrefix(pattern)
      conds = cols.map((col) => `${col} LIKE @${name} ESCAPE '\\'`)
    } else {
      params[name] = pattern
      conds = cols.map((col) => `${col} = @${name}`)
    }
    out.push(conds.length === 1 ? conds[0] : `(${conds.join(' OR ')})`)
  }
  add(['provider'], r.provider, 'sc_provider')
  add(['model', 'requested_model'], r.model_pattern, 'sc_model')
  add(['agent'], r.agent, 'sc_agent')
  add(['tenant'], r.tenant, 'sc_tenant')
  return out.map((c) => ` AND ${c}`).join('')
}
