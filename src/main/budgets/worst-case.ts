import { emptyUsage, isObject, type Usage } from '../metering/usage'
import type { Pricer } from '../pricing/price'
import { OPENAI_TIER_PRICING_IDS } from '../pricing/priority-prices'
import { askedImages } from '../providers/openai-image-tool'
import type { CallContext } from '../proxy/gate'
import { advisorBoundUsd } from './advisor-bound'

/**
 * The most a call can cost, reserved against a budget before it goes upstream (and released
 * when its real cost is known), so that calls in flight at once cannot overshoot a limit.
 *
 * - Prompt: the request body's bytes / 3, as tokens. Real tokens average ~4 bytes of English
 *   and the JSON around the text adds more bytes, so this stays above the real count while
 *   costing nothing to compute (no tokenizer on the hot path). All of it is priced as uncached
 *   input, or, when the request marks anything for the prompt cache (Anthropic's `cache_control`,
 *   Bedrock Converse's `cachePoint`), as cache writes (1.25x the input price; 2x when a mark asks for a 1-hour lifetime): every
 *   prompt token up to the last mark can be written, and a mark's prefix is most of a prompt.
 * - A Responses turn continuing a stored conversation (`previous_response_id`) that this instance
 *   saw answered adds that answer's prompt and output tokens as uncached input: its prompt holds
 *   them (./conversations.ts). One it did not see adds nothing: the bound is then the body's.
 * - Output: `max_completion_tokens`, `max_tokens`, `max_output_tokens`, Gemini's
 *   `generationConfig.maxOutputTokens` (under `request` for Gemini Code Assist), its Interactions API's
 *   `generation_config.max_output_tokens` or Bedrock
 *   Converse's `inferenceConfig.maxTokens` (times `n` choices); without one,
 *   DEFAULT_MAX_OUTPUT_TOKENS.
 * - Priced at the model's price (config overrides, then @pydantic/genai-prices). A requested
 *   model with no known price (an Azure deployment's own name, a router's alias) is priced as
 *   the model its last answered call named (`reservedCost`), else as the model the shape says it
 *   runs on (`CallShape.reserveAs`: a Gemini agent's interaction); one never answered yet and
 *   with no such model reserves 0, as its calls are recorded at cost 0 when the answer names no
 *   priced model either.
 * - Claude's advisor tool: the consultations a request caps (the tool's `max_uses` and `max_tokens`),
 *   at the advisor model's price (./advisor-bound.ts); uncapped ones are not in the bound.
 */

export const DEFAULT_MAX_OUTPUT_TOKENS = 32_768
const BYTES_PER_TOKEN = 3
/** Endpoints billed for input only. */
export const INPUT_ONLY = new Set(['embeddings'])

function positive(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null
}

export function promptTokenBound(bodyBytes: number): number {
  return Math.ceil(bodyBytes / BYTES_PER_TOKEN)
}

export function maxOutputTokens(body: unknown): number {
  if (!isObject(body)) return DEFAULT_MAX_OUTPUT_TOKENS
  // Gemini Code Assist wraps Gemini's request: `{model, project, request: {contents, generationConfig}}`.
  const inner = isObject(body.request) ? body.request : body
  const gen = isObject(inner.generationConfig) ? inner.generationConfig : undefined
  // Gemini's Interactions API: `generation_config.max_output_tokens`.
  const snake = isObject(body.generation_config) ? body.generation_config : undefined
  const converse = isObject(body.inferenceConfig) ? body.inferenceConfig : undefined
  const max =
    positive(body.max_completion_tokens) ??
    positive(body.max_tokens) ??
    positive(body.max_output_tokens) ??
    positive(gen?.maxOutputTokens) ??
    positive(snake?.max_output_tokens) ??
    positive(converse?.maxTokens) ??
    DEFAULT_MAX_OUTPUT_TOKENS
  const n = positive(body.n) ?? positive(gen?.candidateCount) ?? 1
  return Math.ceil(max) * Math.ceil(n)
}

/**
 * A cache mark's lifetime: '1h' when it asks for one, else the default 5 minutes. Anthropic's
 * `cache_control` on a block, or Bedrock Converse's `cachePoint` block.
 */
function markTtl(block: unknown): '5m' | '1h' | null {
  if (!isObject(block)) return null
  const mark = isObject(block.cache_control) ? block.cache_control : isObject(block.cachePoint) ? block.cachePoint : null
  if (!mark) return null
  return mark.ttl === '1h' ? '1h' : '5m'
}

/**
 * The longest lifetime the request's prompt-cache marks ask for, or null for none: Anthropic's
 * `cache_control` (the Messages API, as Bedrock, Vertex AI and OpenRouter carry it) and Bedrock
 * Converse's `cachePoint` blocks, on the request's top level (automatic caching), its `tools`
 * (Converse: `toolConfig.tools`), `system` blocks and messages' content blocks. One step into
 * each list: no walk of the text.
 */
export function cacheWriteTtl(body: unknown): '5m' | '1h' | null {
  if (!isObject(body)) return null
  // Stops at a 1-hour mark: none is longer. A 5-minute mark never shortens one seen before.
  let ttl = markTtl(body)
  if (ttl === '1h') return ttl
  ttl = listTtl(isObject(body.toolConfig) ? body.toolConfig.tools : body.tools, ttl)
  if (ttl === '1h') return ttl
  ttl = listTtl(body.system, ttl)
  if (ttl === '1h') return ttl
  if (Array.isArray(body.messages)) {
    for (const m of body.messages) {
      if (isObject(m)) ttl = listTtl(m.content, ttl)
      if (ttl === '1h') return ttl
    }
  }
  return ttl
}

/** The longest mark among a list's blocks (not a list: none), given the longest seen before (read on every call: no closure, no array). */
function listTtl(list: unknown, ttl: '5m' | '1h' | null): '5m' | '1h' | null {
  if (!Array.isArray(list)) return ttl
  for (const block of list) {
    const t = markTtl(block)
    if (t === '1h') return t
    if (t && !ttl) ttl = t
  }
  return ttl
}

/** The model a requested model's calls were answered as (provider, requested model), when it differs. */
export type AnsweredAs = (provider: string, model: string) => string | undefined

/**
 * Sets on `usage` the charges beyond its tokens that the request says its call makes (see
 * `reservedCost`); returns whether it set any.
 */
function markPerUse(pricer: Pricer, ctx: CallContext, usage: Usage): boolean {
  let any = false
  if (ctx.shape.webSearchEachCall) {
    usage.web_searches = 1
    usage.web_search_preview = true
    any = true
  }
  // A Gemini request with the Google Search tool, where grounding is priced: one query (Gemini 3)
  // or its grounded prompt (older models; the most it is billed). Free, it reserves nothing.
  if (ctx.shape.googleSearch && pricer.searchGrounding === 'paid') {
    usage.google_search_queries = 1
    usage.google_search_grounded = true
    any = true
  }
  // A Responses request with the image_generation tool (OpenAI, Azure OpenAI): one image it may make.
  if (imageToolRequest(ctx)) {
    const images = askedImages(ctx.body.tools)
    if (images) {
      usage.tool_images = images
      any = true
    }
  }
  return any
}

/** Whether the request is one whose image_generation tool a reservation counts (OpenAI, Azure OpenAI Responses). */
function imageToolRequest(ctx: CallContext): boolean {
  return ctx.shape.endpoint === 'responses' && OPENAI_TIER_PRICING_IDS.has(ctx.provider.pricingId) && Array.isArray(ctx.body?.tools)
}

/** Whether such a request names the image_generation tool (no usage built: `reservedPerUseUsd`'s check). */
function asksImageTool(ctx: CallContext): boolean {
  if (!imageToolRequest(ctx)) return false
  for (const t of ctx.body.tools as unknown[]) if (isObject(t) && t.type === 'image_generation') return true
  return false
}

/**
 * What a reservation of the call already counts of the charges beyond its tokens (its request's
 * search, grounding query or image: `reservedCost`), the way ./call-fees.ts learns them from
 * answered calls (a Perplexity request fee is in the tokens' price on both sides); 0 for a
 * request that says of none. The call's tokens play no part: these charges are per use.
 */
export function reservedPerUseUsd(pricer: Pricer, ctx: CallContext, answeredAs?: AnsweredAs): number {
  // Most requests say of none: told without building a usage.
  if (!ctx.shape.webSearchEachCall && !(ctx.shape.googleSearch && pricer.searchGrounding === 'paid') && !asksImageTool(ctx)) return 0
  const marked = emptyUsage()
  if (!markPerUse(pricer, ctx, marked)) return 0
  const fees = reservedCost(pricer, ctx, marked, answeredAs, false) - reservedCost(pricer, ctx, emptyUsage(), answeredAs, false)
  return fees > 0 ? fees : 0
}

/**
 * What `usage` costs at the call's model, for a reservation: the requested model's price, else
 * (it has none) the price of the model its calls were last answered as, else of the model the
 * shape says it runs on (`CallShape.reserveAs`); 0 when none is known.
 * It is priced as the request asks to be billed: with the data-residency premium, at a fast tier,
 * at a Perplexity search context size's request fee, Pro Search's when it asks for it, with the
 * web search an OpenAI Chat Completions search model makes for every answer, one Google Search
 * query or grounded prompt of a Gemini request with that tool when `pricing.google_search_grounding`
 * is `paid` (`CallShape`), one image of an OpenAI Responses request's image_generation tool at its
 * quality and size (`askedImages`); with `perUse` false, none of the last three (set on `usage`
 * already, or not wanted). Other per-use tool fees (a Responses call's searches, a Gemini 3 call's
 * queries beyond the first) are not known before its answer: an `expected` reservation adds what
 * its model's answered calls were charged beyond their tokens (./expected.ts), a worst case does not.
 */
export function reservedCost(pricer: Pricer, ctx: CallContext, usage: Usage, answeredAs?: AnsweredAs, perUse = true): number {
  if (ctx.shape.dataResidency) usage.data_residency = true
  if (ctx.shape.fast) usage.fast = true
  if (ctx.shape.searchContextSize) usage.search_context_size = ctx.shape.searchContextSize
  if (ctx.shape.proSearch) usage.pro_search = true
  if (perUse) markPerUse(pricer, ctx, usage)
  const at = new Date(ctx.ts)
  let p = pricer.price(ctx.provider.pricingId, ctx.provider.name, ctx.shape.model, usage, at)
  if (!p.priced && answeredAs) {
    const answered = answeredAs(ctx.provider.name, ctx.shape.model)
    if (answered) p = pricer.price(ctx.provider.pricingId, ctx.provider.name, answered, usage, at)
  }
  // A model known only by what runs it (a Gemini agent's interaction): that model's price.
  if (!p.priced && ctx.shape.reserveAs) p = pricer.price(ctx.provider.pricingId, ctx.provider.name, ctx.shape.reserveAs, usage, at)
  return p.priced && Number.isFinite(p.cost_usd) && p.cost_usd > 0 ? p.cost_usd : 0
}

/**
 * `carried`: the tokens of the stored conversation a Responses turn continues, as far as this
 * instance saw it answered (./conversations.ts): its prompt holds them besides its body, all
 * priced as uncached input (the most they cost).
 */
export function worstCaseUsd(pricer: Pricer, ctx: CallContext, answeredAs?: AnsweredAs, carried = 0): number {
  if (!ctx.shape.billable) return 0
  // Billed by what the request asks for (an xAI video's seconds), not by tokens: that is its most.
  if (ctx.shape.expectedUsd !== undefined) return ctx.shape.expectedUsd
  if (!ctx.shape.model) return 0
  const usage = emptyUsage()
  const bound = promptTokenBound(ctx.bodyBytes)
  usage.input_tokens = bound + carried
  const ttl = cacheWriteTtl(ctx.body)
  if (ttl) usage.cache_write_tokens = bound
  if (ttl === '1h') usage.cache_write_1h_tokens = bound
  usage.output_tokens = INPUT_ONLY.has(ctx.shape.endpoint) ? 0 : maxOutputTokens(ctx.body)
  const own = reservedCost(pricer, ctx, usage, answeredAs)
  if (ctx.shape.endpoint !== 'messages') return own
  return own + advisorBoundUsd(pricer, ctx, bound + carried, usage.output_tokens, (u) => reservedCost(pricer, ctx, u, answeredAs, false))
}
