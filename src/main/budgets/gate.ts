import { errorBody } from '../http/errors'
import type { Admission, CallContext, CallGate } from '../proxy/gate'
import type { BudgetEngine, PeriodState, Refusal } from './engine'

export const WARNING_HEADER = 'x-burnrate-budget-warning'
/** The `error` recorded for a refused call. */
export const REFUSAL_REASON = 'budget_exceeded'

/** Dollars with 2 decimals, or as many (up to 6) as the limit needs (`0.004/0.005`). */
export function formatUsd(n: number, limit: number): string {
  const text = String(limit)
  const dot = text.indexOf('.')
  const decimals = dot === -1 || text.includes('e') ? 2 : Math.min(6, Math.max(2, text.length - dot - 1))
  return n.toFixed(decimals)
}

/** `<pattern> daily 4.12/5.00 USD`; anything a header cannot carry is replaced by `?`. */
export function warningText(pattern: string, p: PeriodState): string {
  const text = `${pattern} ${p.period} ${formatUsd(p.spent, p.limit)}/${formatUsd(p.limit, p.limit)} USD`
  return text.replace(/[^\x20-\x7e]/g, '?')
}

function refusalMessage(r: Refusal, hint: string): string {
  const { rule, state: p } = r
  const who = hint ? `API key ${hint}` : 'This API key'
  const limit = `the ${p.period} limit of $${formatUsd(p.limit, p.limit)} set by budget rule "${rule.api_key_pattern}" (${rule.source})`
  const resets = new Date(p.resetsAt).toISOString()
  if (r.kind === 'reached') {
    return `${who} has spent $${formatUsd(p.spent, p.limit)} of ${limit}; calls are refused until the period resets at ${resets}.`
  }
  const left = Math.max(0, p.limit - p.spent - r.reservedUsd)
  const inFlight = r.reservedUsd > 0 ? `, after $${r.reservedUsd.toFixed(6)} reserved by calls in flight` : ''
  return (
    `This call could cost up to $${r.worstCaseUsd.toFixed(6)} (prompt size plus max output tokens), more than the ` +
    `$${left.toFixed(6)} left of ${limit} (spent $${formatUsd(p.spent, p.limit)}${inFlight}); ` +
    `lower max_tokens or wait until ${resets}.`
  )
}

/** The proxy's gate: asks the engine and turns its decision into a 429 or warning headers. */
export function budgetGate(engine: BudgetEngine): CallGate {
  return {
    admit(ctx: CallContext): Admission {
      // Money budgets leave plan usage alone (no money per token): the hook for a rule that opts in.
      if (ctx.billing === 'subscription') return {}
      const now = Date.now()
      const d = engine.admit(ctx, now)
      const headers = d.warnings.length
        ? { [WARNING_HEADER]: d.warnings.map((w) => warningText(w.rule.api_key_pattern, w.state)).join(', ') }
        : undefined
      if (!d.refuse) return d.settle || headers ? { headers, settle: d.settle } : {}
      const r = d.refuse
      const p = r.state
      return {
        refuse: {
          status: 429,
          headers: {
            ...headers,
            'x-should-retry': 'false',
            'retry-after': String(Math.max(1, Math.ceil((p.resetsAt - now) / 1000))),
          },
          body: errorBody('budget_exceeded', refusalMessage(r, ctx.keyHint), {
            api_key_pattern: r.rule.api_key_pattern,
            period: p.period,
            limit_usd: p.limit,
            spent_usd: p.spent,
            resets_at: new Date(p.resetsAt).toISOString(),
          }),
          reason: REFUSAL_REASON,
        },
      }
    },
  }
}
