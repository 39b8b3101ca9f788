import { emptyUsage, isObject } from '../metering/usage'
import type { Pricer } from '../pricing/price'
import type { CallContext } from '../proxy/gate'

/**
 * The most the consultations of Claude's advisor tool (`advisor_20260301`) can add to a call, for a
 * worst-case reservation (./worst-case.ts): billed at the advisor model's rates, on top of the
 * executor's tokens. Known only when the request caps them, the tool naming its `model`, `max_uses`
 * and `max_tokens` (the advisor's output, thinking included, per use): each use reads the transcript
 * so far, at most the prompt's bound, the executor's output cap and every use's advice, as input
 * (as cache writes when the tool asks for `caching`, at the longer lifetime it asks for), and writes
 * at most its cap, all at the advisor model's price, else the call's (as the call is recorded:
 * pricing/advisor.ts). A tool that leaves a cap out, or a request naming none, adds 0: how often
 * it is consulted, or how much it writes, is not in the request (an `expected` reservation learns it).
 *
 * `price`: the call's own price for a usage (`reservedCost`), used for an advisor model nothing prices.
 */
export function advisorBoundUsd(pricer: Pricer, ctx: CallContext, promptTokens: number, outputTokens: number, price: (u: ReturnType<typeof emptyUsage>) => number): number {
  const tools = ctx.body?.tools
  if (!Array.isArray(tools)) return 0
  let total = 0
  for (const t of tools) {
    if (!isObject(t) || typeof t.type !== 'string' || !t.type.startsWith('advisor_')) continue
    const uses = count(t.max_uses)
    const cap = count(t.max_tokens)
    if (uses === null || cap === null || typeof t.model !== 'string') continue
    const read = promptTokens + outputTokens + uses * cap
    const u = emptyUsage()
    u.input_tokens = uses * read
    u.output_tokens = uses * cap
    if (isObject(t.caching)) {
      u.cache_write_tokens = u.input_tokens
      if (t.caching.ttl === '1h') u.cache_write_1h_tokens = u.input_tokens
    }
    if (ctx.shape.dataResidency) u.data_residency = true
    const p = pricer.price(ctx.provider.pricingId, ctx.provider.name, t.model, u, new Date(ctx.ts))
    const usd = p.priced ? p.cost_usd : price(u)
    if (Number.isFinite(usd) && usd > 0) total += usd
  }
  return total
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null
}
