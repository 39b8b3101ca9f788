import type { Attributes } from '@opentelemetry/api'
import type { CallBilling } from '../../shared/api'
import type { CallRecord } from '../ledger/record'
import type { MovedCost } from '../pricing/moves'
import { BoundedLabel, billingLabel } from '../metrics/labels'
import { type Instruments, TOKEN_FIELDS, TOKEN_TYPES } from './instruments'
import { BURNRATE, ERROR_TYPE, GEN_AI, errorType, operationName, providerName } from './semconv'

/** A tick's token counts of one attribute set, in the order of TOKEN_TYPES. */
type TokenSums = Map<string, { attributes: Attributes; sums: number[] }>

/** Recorded calls, and the later moves of their costs and tokens, as points of the instruments (their labels bounded). */
export class CallMetrics {
  private readonly model = new BoundedLabel(200)
  private readonly agent = new BoundedLabel(50)
  private readonly tenant = new BoundedLabel(200)
  /** The operation is the ledger's endpoint where the conventions have no name for it: a Gemini call's is the method its client names. */
  private readonly operation = new BoundedLabel(50)
  /**
   * `error.type` on the duration histogram: Burnrate's reason, a status code, or what the provider's
   * answer named, which some APIs give as words carrying the request's figures (Mistral's
   * Conversations, Gemini's Interactions: "Prompt contains 40312 tokens…"), a new value per call.
   */
  private readonly errorType = new BoundedLabel(50)

  constructor(private readonly ins: Instruments) {}

  /** A tick's calls. */
  recordAll(calls: readonly CallRecord[]): void {
    // Token counts are summed per attribute set and added once per tick (the SDK hashes the
    // attributes of every measurement); histograms and cost take each call as it is.
    const tokenSums: TokenSums = new Map()
    for (const c of calls) {
      try {
        this.record(c, tokenSums)
      } catch {
        // one call the SDK refuses costs its own points only
      }
    }
    for (const { attributes, sums } of tokenSums.values()) {
      TOKEN_TYPES.forEach((type, i) => {
        if (sums[i] > 0) this.ins.allTokens.add(sums[i], { ...attributes, [BURNRATE.tokenType]: type })
      })
    }
  }

  /**
   * Recorded calls' costs and tokens that moved (re-pricing, a background response's real usage):
   * a rise is added to the cost (`burnrate.tokens`) counter, a fall to the reductions counter, with
   * the attributes the call was counted with. The token histogram keeps each call as recorded.
   */
  moved(moves: readonly MovedCost[]): void {
    const ins = this.ins
    for (const m of moves) {
      try {
        const base = this.callAttributes(m.endpoint, m.provider, m.model)
        const attributes = this.costAttributes(base, m.agent, m.tenant, m.billing)
        if (m.delta > 0) ins.cost.add(m.delta, attributes)
        else if (m.delta < 0) ins.costReductions.add(-m.delta, attributes)
        const t = m.tokens
        if (t) {
          TOKEN_TYPES.forEach((type, i) => {
            const d = t[TOKEN_FIELDS[i]] ?? 0
            if (d > 0) ins.allTokens.add(d, { ...base, [BURNRATE.tokenType]: type })
            else if (d < 0) ins.tokenReductions.add(-d, { ...base, [BURNRATE.tokenType]: type })
          })
        }
      } catch {
        // a value the SDK refuses is that move's loss only
      }
    }
  }

  /** A call's (bounded) operation, provider and (bounded) model: every instrument's attributes. */
  private callAttributes(endpoint: string, provider: string, model: string): Attributes {
    return { [GEN_AI.operation]: this.operation.value(operationName(endpoint)), [GEN_AI.provider]: providerName(provider), [GEN_AI.requestModel]: this.model.value(model) }
  }

  /** What a call's cost is counted under (and every later move of it): with its agent, tenant and billing (plan value is not spend). */
  private costAttributes(base: Attributes, agent: string, tenant: string, billing: CallBilling | undefined): Attributes {
    return { ...base, [GEN_AI.agent]: this.agent.value(agent), [BURNRATE.tenant]: this.tenant.value(tenant), [BURNRATE.billing]: billingLabel(billing) }
  }

  private record(c: CallRecord, tokenSums: TokenSums): void {
    const ins = this.ins
    const base = this.callAttributes(c.endpoint, c.provider, c.model)
    // Only a call whose tokens are known: one refused (a budget, the provider's 429) or failed
    // before any usage is recorded with no token counted, and 0-token points skewed every average
    // and percentile of the histogram. Its duration and cost points stay.
    if (c.input_tokens > 0 || c.output_tokens > 0) {
      ins.tokens.record(c.input_tokens, { ...base, [GEN_AI.tokenType]: 'input' })
      ins.tokens.record(c.output_tokens, { ...base, [GEN_AI.tokenType]: 'output' })
    }
    const err = errorType(c)
    ins.duration.record(c.latency_ms / 1000, err ? { ...base, [ERROR_TYPE]: this.errorType.value(err) } : base)
    ins.cost.add(c.cost_usd, this.costAttributes(base, c.agent, c.tenant, c.billing))
    const key = `${base[GEN_AI.operation]}\n${base[GEN_AI.provider]}\n${base[GEN_AI.requestModel]}`
    let t = tokenSums.get(key)
    if (!t) {
      t = { attributes: base, sums: [0, 0, 0, 0, 0] }
      tokenSums.set(key, t)
    }
    t.sums[0] += c.input_tokens
    t.sums[1] += c.output_tokens
    t.sums[2] += c.cache_read_tokens
    t.sums[3] += c.cache_write_tokens
    t.sums[4] += c.reasoning_tokens
  }
}
