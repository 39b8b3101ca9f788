import { patternProblem } from '../budgets/pattern'
import type { RuleInput } from '../budgets/store'

export const RULE_FIELDS = ['api_key_pattern', 'daily_limit_usd', 'monthly_limit_usd', 'action', 'soft_limit_pct'] as const

export type Checked = { ok: true; rule: RuleInput } | { ok: false; param: string | null; message: string }

function fail(param: string | null, message: string): Checked {
  return { ok: false, param, message }
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v)
}

/** Checks a POSTed rule (contract: Budget rules), naming the first field that is wrong. */
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
  if (pattern === undefined || pattern === null) return fail('api_key_pattern', 'api_key_pattern is required: a whole API key, or a prefix followed by "*".')
  if (typeof pattern !== 'string') return fail('api_key_pattern', 'api_key_pattern must be a string.')
  const problem = patternProblem(pattern)
  if (problem) return fail('api_key_pattern', `api_key_pattern: ${problem}.`)

  const limits: Record<'daily_limit_usd' | 'monthly_limit_usd', number | null> = { daily_limit_usd: null, monthly_limit_usd: null }
  for (const f of ['daily_limit_usd', 'monthly_limit_usd'] as const) {
    const v = b[f]
    if (v === undefined || v === null) continue
    if (!isNumber(v) || v < 0) return fail(f, `${f} must be a finite number of US dollars >= 0, or null for no limit.`)
    limits[f] = v
  }
  if (limits.daily_limit_usd === null && limits.monthly_limit_usd === null) {
    return fail('daily_limit_usd', 'daily_limit_usd or monthly_limit_usd must be a number: a rule needs at least one limit.')
  }

  const action = b.action
  if (action !== 'block' && action !== 'warn') {
    return fail('action', `action must be "block" or "warn"${action === undefined ? ' (it is required)' : ''}.`)
  }

  const soft = b.soft_limit_pct
  if (soft !== undefined && soft !== null && (!isNumber(soft) || soft < 0 || soft > 1)) {
    return fail('soft_limit_pct', 'soft_limit_pct must be a number from 0 to 1 (a fraction of the limit), or null.')
  }

  return {
    ok: true,
    rule: {
      api_key_pattern: pattern,
      daily_limit_usd: limits.daily_limit_usd,
      monthly_limit_usd: limits.monthly_limit_usd,
      action,
      soft_limit_pct: (soft as number | null | undefined) ?? null,
    },
  }
}
