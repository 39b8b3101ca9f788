import { RULE_OPTION_FIELDS, type BudgetRuleOptions, type ReserveMode } from '../../shared/api'
import { PROVIDER_NAMES } from '../providers/registry'
import { matches, patternProblem } from './pattern'
import type { RuleInput } from './store'

/**
 * Checks one budget rule, from the config file or the admin API (contract: Budget rules and
 * its second-wave additions), naming the first field that is wrong. Both paths share it so a
 * rule the admin API refuses is also refused in the config file, with the same message.
 */

export const RULE_FIELDS = ['api_key_pattern', 'daily_limit_usd', 'monthly_limit_usd', 'action', 'soft_limit_pct', ...RULE_OPTION_FIELDS] as const

export const DEFAULT_ALERT_AT_PCT: readonly number[] = [0.5, 0.8, 0.9, 1]
/** Longest rolling window: 31 days. */
export const MAX_WINDOW_HOURS = 744

export type Checked = { ok: true; rule: RuleInput } | { ok: false; param: string | null; message: string }

const USD_FIELDS = ['daily_limit_usd', 'weekly_limit_usd', 'monthly_limit_usd', 'window_limit_usd', 'session_limit_usd'] as const
const SCOPE_FIELDS = ['model_pattern', 'provider', 'agent', 'tenant'] as const
const RATE_FIELDS = ['requests_per_minute', 'tokens_per_minute'] as const

function fail(param: string | null, message: string): Checked {
  return { ok: false, param, message }
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v)
}

const absent = (v: unknown) => v === undefined || v === null

/** Why a scope pattern (model, provider, agent, tenant) is not valid, or null. */
function scopeProblem(p: string): string | null {
  if (p.length === 0) return 'expected a non-empty string'
  const star = p.indexOf('*')
  if (star !== -1 && star !== p.length - 1) return '"*" is only allowed once, at the end of the pattern'
  return null
}

export function checkRule(body: unknown): Checked {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail(null, `The request body must be a JSON object with the fields ${RULE_FIELDS.join(', ')}.`)
  }
  const b = body as Record<string, unknown>
  const unknown = Object.keys(b).filter((k) => !(RULE_FIELDS as readonly string[]).includes(k))
  if (unknown.length > 0) {
    const names = unknown.map((k) => `"${k}"`).join(', ')
    return fail(unknown[0], `Unknown field${unknown.length > 1 ? 's' : ''} ${names}; a rule has only ${RULE_FIELDS.join(', ')}.`)
  }

  const pattern = b.api_key_pattern
  if (absent(pattern)) return fail('api_key_pattern', 'api_key_pattern is required: a whole API key, or a prefix followed by "*".')
  if (typeof pattern !== 'string') return fail('api_key_pattern', 'api_key_pattern must be a string.')
  const problem = patternProblem(pattern)
  if (problem) return fail('api_key_pattern', `api_key_pattern: ${problem}.`)

  const usd: Record<(typeof USD_FIELDS)[number], number | null> = {
    daily_limit_usd: null, weekly_limit_usd: null, monthly_limit_usd: null, window_limit_usd: null, session_limit_usd: null,
  }
  for (const f of USD_FIELDS) {
    const v = b[f]
    if (absent(v)) continue
    if (!isNumber(v) || v < 0) return fail(f, `${f} must be a finite number of US dollars >= 0, or null for no limit.`)
    usd[f] = v
  }

  const hours = b.window_hours
  let windowHours: number | null = null
  if (!absent(hours)) {
    if (!isNumber(hours) || hours <= 0 || hours > MAX_WINDOW_HOURS) {
      return fail('window_hours', `window_hours must be a number of hours above 0 and at most ${MAX_WINDOW_HOURS} (31 days), or null.`)
    }
    windowHours = hours
  }
  if ((windowHours === null) !== (usd.window_limit_usd === null)) {
    return windowHours === null
      ? fail('window_hours', 'window_limit_usd needs window_hours: the length of the rolling window in hours.')
      : fail('window_limit_usd', 'window_hours needs window_limit_usd: the most that may be spent in any window of that length.')
  }

  const rates: Record<(typeof RATE_FIELDS)[number], number | null> = { requests_per_minute: null, tokens_per_minute: null }
  for (const f of RATE_FIELDS) {
    const v = b[f]
    if (absent(v)) continue
    if (!isNumber(v) || !Number.isInteger(v) || v < 1) return fail(f, `${f} must be a whole number >= 1, or null for no rate limit.`)
    rates[f] = v
  }

  if (Object.values(usd).every((v) => v === null) && Object.values(rates).every((v) => v === null)) {
    return fail(
      'daily_limit_usd',
      'A rule needs at least one limit: daily_limit_usd, weekly_limit_usd, monthly_limit_usd, window_limit_usd (with window_hours), session_limit_usd, requests_per_minute or tokens_per_minute.',
    )
  }

  const action = b.action
  if (action !== 'block' && action !== 'warn') {
    return fail('action', `action must be "block" or "warn"${action === undefined ? ' (it is required)' : ''}.`)
  }

  const soft = b.soft_limit_pct
  if (!absent(soft) && (!isNumber(soft) || soft < 0 || soft > 1)) {
    return fail('soft_limit_pct', 'soft_limit_pct must be a number from 0 to 1 (a fraction of the limit), or null.')
  }

  const scope: Record<(typeof SCOPE_FIELDS)[number], string | null> = { model_pattern: null, provider: null, agent: null, tenant: null }
  for (const f of SCOPE_FIELDS) {
    const v = b[f]
    if (absent(v)) continue
    const p = typeof v === 'string' ? scopeProblem(v) : 'expected a string'
    if (p) return fail(f, `${f}: ${p} (a whole name, or a prefix followed by "*"), or null for any.`)
    // Calls are matched by their provider's exact name: one no provider has would count no call, and never block.
    if (f === 'provider' && !PROVIDER_NAMES.some((n) => matches(v as string, n))) {
      return fail(f, `provider: no provider is named ${JSON.stringify(v)}; use one of ${PROVIDER_NAMES.join(', ')} (or a prefix of one followed by "*"), or null for any.`)
    }
    scope[f] = v as string
  }

  const alerts = b.alert_at_pct
  let alertAt: number[] | null = null
  if (!absent(alerts)) {
    if (!Array.isArray(alerts) || alerts.length === 0 || alerts.some((x) => !isNumber(x) || x <= 0 || x > 1)) {
      return fail('alert_at_pct', 'alert_at_pct must be a non-empty array of fractions above 0 and at most 1 (e.g. [0.5, 0.8, 1]), or null for the default [0.5, 0.8, 0.9, 1].')
    }
    alertAt = [...new Set(alerts as number[])].sort((x, y) => x - y)
  }

  const reserve = b.reserve ?? 'expected'
  if (reserve !== 'expected' && reserve !== 'max_tokens') {
    return fail('reserve', 'reserve must be "expected" (the default: calls in flight are reserved at what such calls usually cost) or "max_tokens" (at their worst case).')
  }

  const options: BudgetRuleOptions = {
    weekly_limit_usd: usd.weekly_limit_usd,
    window_hours: windowHours,
    window_limit_usd: usd.window_limit_usd,
    session_limit_usd: usd.session_limit_usd,
    ...scope,
    ...rates,
    alert_at_pct: alertAt,
    reserve: reserve as ReserveMode,
  }
  return {
    ok: true,
    rule: {
      api_key_pattern: pattern,
      daily_limit_usd: usd.daily_limit_usd,
      monthly_limit_usd: usd.monthly_limit_usd,
      action,
      soft_limit_pct: (soft as number | null | undefined) ?? null,
      ...options,
    },
  }
}
