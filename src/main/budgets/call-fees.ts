import { emptyUsage, type Usage } from '../metering/usage'
import { withUsageExtra } from '../metering/usage-extra'
import { ownPart } from '../pricing/advisor'
import type { Pricer } from '../pricing/price'
import type { LearntUsage } from './types'

/**
 * What an answered call was charged beyond its tokens, as `expected` reservations learn it
 * (./expected.ts): what only its answer names, web and file searches (pricing/tool-fees.ts), the
 * images an image tool made, Google Search grounding (pricing/search-grounding.ts), and what other
 * models ran inside the call (Claude's advisor tool: `Usage.advisor`, billed at the advisor
 * model's rates, often several times the call's own tokens; those tokens are no part of the call's
 * own, see `ownTokens`). For a call
 * priced from its usage, that is its recorded cost minus what its tokens cost at the price it was
 * recorded at; the tokens are priced as the call was, with everything that sets their price (tier,
 * batch, data residency, modality splits, a Perplexity search context size, whose request fee is
 * thus in the tokens' part: a reservation counts it from the request).
 *
 * A call whose provider reported its own charge (`provider_cost_usd`: OpenRouter, xAI, Perplexity)
 * was recorded at that charge, its whole price, not tokens plus fees: the gap between it and the
 * tokens' list price (a pricier upstream OpenRouter routed to, token classes the usage does not
 * split) grows with the call's tokens, and learnt as a fee it would be added to every call of the
 * model, however small. Such a call's charges beyond tokens are only the per-use charges its usage
 * names, priced as the recorder prices a call that reports none (Sonar Deep Research's searches at
 * $5 per 1,000; a count the price data has no price for, as xAI's tools, at 0), never more than
 * the reported charge; 0 when it names none. What a call billed by units rather than tokens was
 * charged for them (seconds of audio, pages: `UNIT_KEYS`) is beyond its tokens too. When its tokens have no price (a model the price
 * data lacks), the whole reported charge: the reservation prices those tokens at 0.
 *
 * Null when it cannot be known (an unpriced call, tokens no price knows now); 0 for a call whose
 * usage kept nothing beyond its token columns (`usage_extra` null: no JSON read, nothing priced).
 * Never below 0 (a provider's own charge below the list price of its tokens).
 */
export function chargesBeyondTokens(pricer: Pricer, pricingId: string, providerName: string, call: LearntUsage): number | null {
  if (!call.priced) return null
  if (!call.usage_extra) return 0
  let u = usageOf(call)
  const reported = u.provider_cost_usd
  u.provider_cost_usd = undefined
  const at = new Date(call.ts)
  // A reported charge for tokens no price knows (a model the price data does not have yet, which
  // OpenRouter's catalogue is full of): a reservation prices them at 0, so the whole charge is
  // beyond them. Learnt as 0, every call of the model reserved $0 and a block rule let any number
  // of them through at once.
  if (reported !== undefined && reported > 0 && !pricer.price(pricingId, providerName, call.model, u, at).priced) return reported
  if (!perUse(u)) return 0
  // The whole: what was recorded, or for a reported charge, its usage as priced without it.
  const whole = reported === undefined ? { cost_usd: call.cost_usd, priced: true } : pricer.price(pricingId, providerName, call.model, u, at)
  if (!whole.priced) return null
  // The call's own tokens: the parts other models ran (the advisor's) are charges beyond them.
  if (u.advisor) u = ownPart(u)
  u.extra = tokenExtras(u.extra)
  u.web_searches = 0
  u.storage_searches = 0
  u.tool_images = undefined
  u.google_search_queries = undefined
  u.google_search_grounded = undefined
  const tokens = pricer.price(pricingId, providerName, call.model, u, at)
  if (!tokens.priced) return null
  const beyond = Math.min(whole.cost_usd - tokens.cost_usd, reported ?? Infinity)
  return Number.isFinite(beyond) && beyond > 0 ? beyond : 0
}

/**
 * The token counts of the call's own model: its columns less what other models ran inside it
 * (Claude's advisor tool, whose tokens the columns hold too), so that the prompt's cost per byte and
 * the output an `expected` reservation learns are the call's own, and the advisor's charge is learnt
 * once, beyond them (`chargesBeyondTokens`). The call itself for the common call that kept no such
 * part (no JSON read).
 */
export function ownTokens(call: LearntUsage): LearntUsage {
  if (!call.usage_extra || !call.usage_extra.includes('"advisor"')) return call
  const u = usageOf(call)
  if (!u.advisor) return call
  const own = ownPart(u)
  return {
    ...call,
    input_tokens: own.input_tokens,
    output_tokens: own.output_tokens,
    cache_read_tokens: own.cache_read_tokens,
    cache_write_tokens: own.cache_write_tokens,
    cache_write_1h_tokens: own.cache_write_1h_tokens,
  }
}

function usageOf(call: LearntUsage): Usage {
  return withUsageExtra(
    {
      ...emptyUsage(),
      input_tokens: call.input_tokens,
      output_tokens: call.output_tokens,
      cache_read_tokens: call.cache_read_tokens,
      cache_write_tokens: call.cache_write_tokens,
      cache_write_1h_tokens: call.cache_write_1h_tokens,
    },
    call.usage_extra,
  )
}

/** Whether `u` names a charge per use or a part another model ran, which its own tokens' price does not hold (see above). */
function perUse(u: Usage): boolean {
  return (
    u.web_searches > 0 || u.storage_searches > 0 || u.tool_images !== undefined || (u.google_search_queries ?? 0) > 0 || u.google_search_grounded === true ||
    u.advisor !== undefined || billedByUnits(u.extra)
  )
}

/**
 * The counts in a usage's `extra` that are not tokens but what the call is billed by (../metering/usage.ts):
 * seconds of audio (whisper-1, Voxtral) and pages (Mistral's OCR).
 */
const UNIT_KEYS = ['audio_seconds', 'input_document_pages', 'input_annotated_document_pages']

function billedByUnits(extra: Record<string, number> | undefined): boolean {
  return extra !== undefined && UNIT_KEYS.some((k) => (extra[k] ?? 0) > 0)
}

/** `extra` without the units a call is billed by: its tokens' own splits (audio, image tokens…). */
function tokenExtras(extra: Record<string, number> | undefined): Record<string, number> | undefined {
  if (!billedByUnits(extra)) return extra
  const out: Record<string, number> = {}
  for (const [k, v] of Object.entries(extra!)) if (!UNIT_KEYS.includes(k)) out[k] = v
  return Object.keys(out).length > 0 ? out : undefined
}

/**
 * Whether a recorded call teaches `expected` reservations: one with output, or one billed by its
 * audio's seconds or its pages, which has none (a transcription, an OCR call): its charge is what
 * such calls cost beyond their tokens (`chargesBeyondTokens`).
 */
export function teaches(call: Pick<LearntUsage, 'output_tokens' | 'usage_extra'>): boolean {
  if (call.output_tokens > 0) return true
  return !!call.usage_extra && UNIT_KEYS.some((k) => call.usage_extra!.includes(`"${k}"`))
}
