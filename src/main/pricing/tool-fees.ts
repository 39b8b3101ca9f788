import type { ModelInfo, ModelPrice } from '@pydantic/genai-prices'
import { mapModelPrices } from './model-prices'

/**
 * Per-use fees of the providers' server-side tools, where the price data lacks them. The library
 * prices a count (`web_searches`, `storage_searches`) only where the model's table has a price for
 * it (`web_searches_kcount`, `storage_searches_kcount`, per 1,000), so a count the table has no
 * price for costs nothing.
 *
 * - OpenAI bills its built-in tools by the call, whatever the model (the pricing page's "Built-in
 *   tools", as OpenAI staff quote it at community.openai.com/t/1363698): web search $10 per 1,000
 *   calls ("all models"), file search $2.50 per 1,000. The data gives those fees to most of its
 *   OpenAI models but not to o3-deep-research, o4-mini-deep-research, gpt-5.3, gpt-5.3-codex,
 *   o3-pro, o1, codex-mini, gpt-4o-search-preview…: `withToolFees` gives a model of the `openai`
 *   and `azure` price data each fee it lacks (ChatGPT's Codex backend is priced as `openai`).
 * - `web_search_preview`, the earlier version of the tool, costs $25 per 1,000 calls on a
 *   non-reasoning model (gpt-4o, gpt-4.1 and their minis; its search content tokens are free),
 *   $10 on a reasoning one; the Chat Completions search models (gpt-4o-search-preview,
 *   gpt-4o-mini-search-preview) are billed the same per answer. The data has one search fee per
 *   model: `withPreviewSearchFee` gives a non-reasoning model the preview's, for a call marked
 *   `Usage.web_search_preview`.
 * - Anthropic bills Claude's web search $10 per 1,000 searches. The data lacks it for a few of
 *   its `anthropic` models (Claude 3 Haiku, Claude 2…), given it here. Its Claude tables under
 *   `google` (Vertex AI) lack it too, but Google's pages seen say nothing of what Vertex AI bills
 *   for it, so none is guessed: such a call is priced without it and the Pricer warns (once per
 *   model, `UNPRICED_USE_WARNED`). Amazon Bedrock does not offer Claude's web search (its tool
 *   list takes only client-side tools), so its tables are left as they are.
 *
 * Each is applied once, to a model's table when a lookup finds it (./library-prices.ts); a fee the
 * data has is kept (the data then knows better).
 */
export const OPENAI_WEB_SEARCH_KCOUNT = 10
export const OPENAI_FILE_SEARCH_KCOUNT = 2.5
export const OPENAI_PREVIEW_SEARCH_KCOUNT = 25
export const CLAUDE_WEB_SEARCH_KCOUNT = 10

const OPENAI_PRICING_IDS = new Set(['openai', 'azure'])
const CLAUDE = /claude/i
/** OpenAI's non-reasoning models that the web search tool serves (the data's ids: gpt-4o, gpt-4o-mini, gpt-4.1…). */
const NON_REASONING = /^(?:ft:)?gpt-4(?:o|\.1)(?![0-9])/

/**
 * The price data whose per-use counts are always billed: a call there that carries a count its
 * model's table cannot price (after the fees above) is warned about. Not Perplexity's, whose
 * Sonar answers count their searches (`num_search_queries`) but are billed by the request.
 */
export const UNPRICED_USE_WARNED: ReadonlySet<string> = new Set(['openai', 'azure', 'anthropic', 'google', 'aws'])

/** The per-use counts the library prices, each with the key of its price. */
const COUNTS = [
  ['web_searches', 'web_searches_kcount'],
  ['storage_searches', 'storage_searches_kcount'],
] as const
export type UseCount = (typeof COUNTS)[number][0]
const NONE: readonly UseCount[] = []

/** `model` with each fee of its provider's tools it lacks (see above); the same object when none is added. */
export function withToolFees(pricingId: string, model: ModelInfo): ModelInfo {
  if (CLAUDE.test(model.id)) return pricingId === 'anthropic' ? mapModelPrices(model, claudeFees) : model
  return OPENAI_PRICING_IDS.has(pricingId) ? mapModelPrices(model, openaiFees) : model
}

function openaiFees(p: ModelPrice): ModelPrice {
  const web = p.web_searches_kcount === undefined
  const file = p.storage_searches_kcount === undefined
  if (!web && !file) return p
  const out = { ...p }
  if (web) out.web_searches_kcount = OPENAI_WEB_SEARCH_KCOUNT
  if (file) out.storage_searches_kcount = OPENAI_FILE_SEARCH_KCOUNT
  return out
}

function claudeFees(p: ModelPrice): ModelPrice {
  return p.web_searches_kcount === undefined ? { ...p, web_searches_kcount: CLAUDE_WEB_SEARCH_KCOUNT } : p
}

/** `model` with the `web_search_preview` fee of a non-reasoning OpenAI model; the same object for any other. */
export function withPreviewSearchFee(pricingId: string, model: ModelInfo): ModelInfo {
  if (!OPENAI_PRICING_IDS.has(pricingId) || !NON_REASONING.test(model.id)) return model
  return mapModelPrices(model, (p) => (p.web_searches_kcount === OPENAI_PREVIEW_SEARCH_KCOUNT ? p : { ...p, web_searches_kcount: OPENAI_PREVIEW_SEARCH_KCOUNT }))
}

/** The per-use counts some price of `model` (one of its dated prices) has no price for. */
export function unpricedUses(model: ModelInfo): readonly UseCount[] {
  const tables = Array.isArray(model.prices) ? model.prices.map((c) => c.prices) : [model.prices]
  const out = COUNTS.filter(([, key]) => tables.some((t) => t[key] === undefined)).map(([count]) => count)
  return out.length > 0 ? out : NONE
}
