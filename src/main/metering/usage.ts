/**
 * Token usage of one call, normalised across providers (contract: the `call` fields).
 * `input_tokens` is every prompt token: cached reads and cache writes are parts of it.
 * `reasoning_tokens` is part of `output_tokens`.
 */
export interface Usage {
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  /** All prompt-cache writes; for Anthropic the 5-minute and 1-hour writes together. */
  cache_write_tokens: number
  /** The part of `cache_write_tokens` written with a 1-hour lifetime (priced higher). */
  cache_write_1h_tokens: number
  reasoning_tokens: number
  /**
   * Server-side web searches billed per use (Anthropic `server_tool_use.web_search_requests`,
   * the Responses API's `web_search_call` output items whose action is a search).
   */
  web_searches: number
  /** Server-side file searches billed per use (the Responses API's `file_search_call` output items). */
  storage_searches: number
  /**
   * Finer @pydantic/genai-prices usage keys, each a part of one of the counts above and priced
   * at its own rate where the model has one: `input_audio_tokens`, `input_image_tokens`,
   * `cache_audio_read_tokens`, `output_image_tokens`… (Gemini modalities, gpt-image-1, audio
   * models); and counts of what is billed by other units, which are not token counts:
   * `audio_seconds`, the length of audio billed by the second (whisper-1, Voxtral), and
   * `input_document_pages` (`input_annotated_document_pages` the annotated ones), the pages of
   * Mistral's OCR.
   */
  extra?: Record<string, number>
  /**
   * The output image tokens of the images the Responses API's image_generation tool made, by the
   * GPT Image model that made them (`gpt-image-1` when the tool names none), partial images
   * included: not in the counts above (the response's usage is the mainline model's only), and
   * priced as that image model's output image tokens on top of them. See
   * providers/openai-image-tool.ts and pricing/tool-images.ts.
   */
  tool_images?: Record<string, number>
  /**
   * A count in this usage is a guess, not what the answer said (an image the tool made at a
   * quality or size its answer does not name): the call is recorded `estimated`. Not kept in
   * `usage_extra` (the ledger's `estimated` column says it).
   */
  guessed?: boolean
  /** The charge the provider itself reported for the call in USD (OpenRouter, Perplexity). */
  provider_cost_usd?: number
  /**
   * Billed at the provider's Batch API rates: a request run in a batch (OpenAI's Batch API,
   * Anthropic's Message Batches) costs half of every token price, as both publish; per-use
   * charges (web searches) are not discounted. See pricing/price.ts.
   */
  batch?: boolean
  /**
   * With `batch`: a request run through a Batch API whose discount Burnrate cannot confirm for its
   * model (Groq's, whose published discount has changed; Together's, which discounts only the
   * models its list names): its tokens are recorded unpriced, never at a guessed rate, and stay
   * so when re-priced. See pricing/price.ts.
   */
  batch_rate_unknown?: boolean
  /**
   * A call its provider bills by the time it ran, not by its tokens (xAI's voice agent sockets,
   * billed per minute of the session): its tokens are recorded exactly, unpriced (no token price
   * is its bill), unless the provider reported its charge, and stay so when re-priced. See pricing/price.ts.
   */
  billed_by_time?: boolean
  /**
   * Billed with a data-residency premium: every token price times 1.1 (DATA_RESIDENCY_MULTIPLIER),
   * as Anthropic bills a call whose answer says it ran in the US only (`usage.inference_geo:
   * "us"`) and Vertex AI bills Claude Sonnet 4.5 and later models through a regional endpoint;
   * per-use charges (web searches) are not raised. See pricing/price.ts.
   */
  data_residency?: boolean
  /**
   * Served at a faster tier that costs more per token, by model: Anthropic's fast mode (the
   * answer's `usage.speed: "fast"`), OpenAI's Fast mode (formerly Priority processing:
   * `service_tier: "priority"` or `"fast"`), Gemini's priority inference (`usageMetadata.serviceTier`, Vertex AI's `trafficType: ON_DEMAND_PRIORITY`). The price data has no such rates: a call is priced at
   * a `pricing.overrides` entry with `speed: fast` for its model when there is one, else (OpenAI's)
   * at the model's published Priority prices (pricing/priority-prices.ts), else at the standard
   * rate (for OpenAI's, said once per model in the log). See pricing/price.ts.
   */
  fast?: boolean
  /**
   * The search context size a Perplexity Sonar call ran with (`low`, `medium`, `high`), which
   * sets its per-request fee: the size its answer names (`usage.search_context_size`), else the
   * one its request set (`web_search_options.search_context_size`), else Perplexity's default,
   * `low`. The price data has one fee per model, the highest; see pricing/request-fees.ts.
   */
  search_context_size?: SearchContextSize
  /**
   * A Perplexity Sonar Pro call that ran Pro Search (`web_search_options.search_type: "pro"` on a
   * stream), billed Pro Search's request fee for its search context size; see
   * pricing/request-fees.ts. Its answer does not say so: it is the request's (`CallShape.proSearch`).
   */
  pro_search?: boolean
  /**
   * An OpenAI call whose `web_searches` ran with the `web_search_preview` tool (the tool the
   * Responses answer echoes in its `tools`), or a Chat Completions search model's answer (one
   * search each): billed $25 per 1,000 on a non-reasoning model (gpt-4o, gpt-4.1 and their
   * minis), $10 on a reasoning one; see pricing/tool-fees.ts.
   */
  web_search_preview?: boolean
  /**
   * Grounding with Google Search on a Gemini call (the `googleSearch` / `google_search_retrieval`
   * tool): the distinct non-empty queries its answer's `candidates[].groundingMetadata.webSearchQueries`
   * name (Gemini 3 models are billed per query; Google ignores empty ones), and whether the prompt
   * was grounded at all (Gemini 2.5 and older are billed per grounded prompt). Priced by the
   * `pricing.google_search_grounding` setting: see pricing/search-grounding.ts.
   */
  google_search_queries?: number
  google_search_grounded?: boolean
  /**
   * The part of the token counts above that other models ran inside the call, by model: Claude's
   * advisor tool (`advisor_20260301`), whose consultations the answer's `usage.iterations` lists as
   * `advisor_message` entries naming the advisor model, billed at that model's rates, not the
   * executor's (providers/anthropic.ts). Priced apart at each model (pricing/advisor.ts).
   */
  advisor?: Record<string, ModelTokens>
}

/** The token counts of one model's part of a call (`Usage.advisor`), each a part of the call's count of the same name. */
export type ModelTokens = Pick<Usage, 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'cache_write_1h_tokens'>

/** A Perplexity search context size (`Usage.search_context_size`). */
export type SearchContextSize = 'low' | 'medium' | 'high'

/** `v` when it is a search context size Perplexity names, else undefined. */
export function searchContextSize(v: unknown): SearchContextSize | undefined {
  return v === 'low' || v === 'medium' || v === 'high' ? v : undefined
}

/** What a data-residency premium multiplies every token price by (`Usage.data_residency`). */
export const DATA_RESIDENCY_MULTIPLIER = 1.1

export function emptyUsage(): Usage {
  return {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    cache_write_1h_tokens: 0,
    reasoning_tokens: 0,
    web_searches: 0,
    storage_searches: 0,
  }
}

/**
 * Whether `u` has anything to price: tokens, units billed otherwise (`extra`: audio billed by the
 * second, whisper-1 reporting a duration and no tokens; pages, Mistral's OCR; images an image
 * tool made, `tool_images`), or a charge the
 * provider reported for units that are not tokens (xAI's image generation: `usage.cost_in_usd_ticks`
 * and no token counts), or a call billed by the time it ran (`billed_by_time`).
 */
export function hasBilledUnits(u: Usage): boolean {
  if (u.input_tokens + u.output_tokens > 0 || (reportedUsd(u.provider_cost_usd) ?? 0) > 0) return true
  if (u.extra) for (const k in u.extra) if (count(u.extra[k]) > 0) return true
  if (u.tool_images) for (const k in u.tool_images) if (count(u.tool_images[k]) > 0) return true
  // Billed by the time it ran (xAI's voice agent): its minutes are billed whatever its tokens.
  return u.billed_by_time === true
}

/** `u` with the images an image tool made (`tool_images`, and `guessed` when a count is a guess) set on it, in place. */
export function setToolImages(u: Usage, images: Pick<Usage, 'tool_images' | 'guessed'>): Usage {
  u.tool_images = images.tool_images
  if (images.guessed) u.guessed = true
  return u
}

/** What a cut answer is known to be billed for beyond its tokens (`MeterResult.billedSoFar`). */
export type BilledSoFar = Partial<
  Pick<Usage, 'tool_images' | 'guessed' | 'fast' | 'batch' | 'web_searches' | 'storage_searches' | 'web_search_preview' | 'google_search_queries' | 'google_search_grounded' | 'billed_by_time'>
>

/** `u` (an estimate) with what its answer was known to be billed for set on it, in place. */
export function addBilledSoFar(u: Usage, b: BilledSoFar): Usage {
  if (b.tool_images) setToolImages(u, b)
  if (b.fast) u.fast = true
  if (b.batch) u.batch = true
  if (b.web_searches) u.web_searches = b.web_searches
  if (b.storage_searches) u.storage_searches = b.storage_searches
  if (b.web_search_preview) u.web_search_preview = true
  if (b.google_search_queries) u.google_search_queries = b.google_search_queries
  if (b.google_search_grounded) u.google_search_grounded = true
  if (b.billed_by_time) u.billed_by_time = true
  return u
}

/** A non-negative integer token count from untrusted JSON, or 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0
}

/** A charge a provider reports, in USD, from untrusted JSON: a finite number, never negative; else undefined. */
export function reportedUsd(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined
}

export function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** A stream event's (or a line's) JSON object; null when the text is not JSON or not an object. */
export function parseObject(text: string): Record<string, any> | null {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return null
  }
  return isObject(v) ? v : null
}
