import { emptyUsage, type ModelTokens, type Usage } from '../metering/usage'
import type { Priced } from './library-prices'

const COUNTS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens'] as const

/**
 * A call whose counts hold parts other models ran (`Usage.advisor`: Claude's advisor tool, whose
 * consultations Anthropic bills at the advisor model's rates), priced as billed: each part at its
 * model (`price`), with the call's batch and data-residency marks (they are the request's), and
 * the rest of the call at the call's own model (`model`). A part whose model nothing prices is
 * priced at the call's model, as it was before parts were kept apart (an advisor is never a
 * cheaper model than the one it advises). Priced only when the call's own part is.
 */
export function priceWithAdvisor(model: string, usage: Usage, advisor: Record<string, ModelTokens>, price: (model: string, u: Usage) => Priced): Priced {
  const own: Usage = { ...usage, advisor: undefined }
  let cost = 0
  for (const m of Object.keys(advisor)) {
    const u = partOf(own, advisor[m]!)
    if (usage.batch) u.batch = true
    if (usage.data_residency) u.data_residency = true
    const p = price(m, u)
    if (!p.priced) continue
    for (const k of COUNTS) own[k] -= u[k]
    cost += p.cost_usd
  }
  own.cache_write_1h_tokens = Math.min(own.cache_write_1h_tokens, own.cache_write_tokens)
  const main = price(model, own)
  return main.priced ? { cost_usd: main.cost_usd + cost, priced: true } : main
}

/**
 * The call's own model's part of `usage`: its counts less every part other models ran
 * (`Usage.advisor`), taken from them as `priceWithAdvisor` takes each part, whether or not its model
 * is priced; no `advisor`. What budget reservations learn as the call's own tokens (budgets/call-fees.ts).
 */
export function ownPart(usage: Usage): Usage {
  const own: Usage = { ...usage, advisor: undefined }
  const advisor = usage.advisor
  if (advisor) {
    for (const m of Object.keys(advisor)) {
      const u = partOf(own, advisor[m]!)
      for (const k of COUNTS) own[k] -= u[k]
    }
  }
  own.cache_write_1h_tokens = Math.min(own.cache_write_1h_tokens, own.cache_write_tokens)
  return own
}

/** A model's part of the counts left in `own`: never more than they hold. */
function partOf(own: Usage, part: ModelTokens): Usage {
  const u = emptyUsage()
  for (const k of COUNTS) u[k] = Math.min(part[k], own[k])
  u.cache_write_1h_tokens = Math.min(u.cache_write_1h_tokens, u.cache_write_tokens)
  return u
}
