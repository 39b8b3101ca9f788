import { type ModelTokens, type SearchContextSize, type Usage, isObject, searchContextSize } from './usage'

/**
 * What a call's usage holds beyond the ledger's token columns, as the compact JSON of the
 * `calls.usage_extra` column: `{web_searches?, storage_searches?, extra?, tool_images?, provider_cost_usd?, batch?, batch_rate_unknown?, billed_by_time?, data_residency?, fast?, search_context_size?, pro_search?, web_search_preview?, google_search_queries?, google_search_grounded?}`
 * with only the keys the call had (non-zero counts, the output image tokens an image tool made by
 * image model, a reported charge, `batch: true` for a
 * request billed at Batch API rates (and `batch_rate_unknown: true` when those rates are not known), `billed_by_time: true` for one its provider bills by the minute (xAI's voice agent), `data_residency: true` for one billed with that premium,
 * `fast: true` for one served at a fast tier, a Perplexity call's `search_context_size`, `pro_search: true`
 * for a Perplexity Pro Search call, `web_search_preview: true` for an OpenAI call whose searches ran
 * with the `web_search_preview` tool or a Chat Completions search model, a Gemini call's Google Search
 * grounding: its distinct queries and `google_search_grounded: true`; the parts other models ran,
 * Claude's advisor tool's, by model: `advisor`). Null for the common
 * call that has none of them: no object is built and nothing is stringified for it.
 */
export function usageExtra(u: Usage): string | null {
  const reported = u.provider_cost_usd
  const hasReported = typeof reported === 'number' && Number.isFinite(reported) && reported >= 0
  if (!u.web_searches && !u.storage_searches && !u.extra && !u.tool_images && !hasReported && !u.batch && !u.batch_rate_unknown && !u.billed_by_time && !u.data_residency && !u.fast && !u.search_context_size && !u.pro_search && !u.web_search_preview && !u.google_search_queries && !u.google_search_grounded && !u.advisor) return null
  const out: {
    web_searches?: number
    storage_searches?: number
    extra?: Record<string, number>
    tool_images?: Record<string, number>
    provider_cost_usd?: number
    batch?: true
    batch_rate_unknown?: true
    billed_by_time?: true
    data_residency?: true
    fast?: true
    search_context_size?: SearchContextSize
    pro_search?: true
    web_search_preview?: true
    google_search_queries?: number
    google_search_grounded?: true
    advisor?: Record<string, Partial<ModelTokens>>
  } = {}
  if (u.web_searches > 0) out.web_searches = u.web_searches
  if (u.storage_searches > 0) out.storage_searches = u.storage_searches
  if (u.extra) {
    const extra = counts(u.extra)
    if (extra) out.extra = extra
  }
  if (u.tool_images) {
    const images = counts(u.tool_images)
    if (images) out.tool_images = images
  }
  if (hasReported) out.provider_cost_usd = reported
  if (u.batch) out.batch = true
  if (u.batch_rate_unknown) out.batch_rate_unknown = true
  if (u.billed_by_time) out.billed_by_time = true
  if (u.data_residency) out.data_residency = true
  if (u.fast) out.fast = true
  const size = searchContextSize(u.search_context_size)
  if (size) out.search_context_size = size
  if (u.pro_search) out.pro_search = true
  if (u.web_search_preview) out.web_search_preview = true
  if (isCount(u.google_search_queries)) out.google_search_queries = u.google_search_queries
  if (u.google_search_grounded) out.google_search_grounded = true
  if (u.advisor) {
    const parts = advisorParts(u.advisor)
    if (parts) out.advisor = parts
  }
  return Object.keys(out).length > 0 ? JSON.stringify(out) : null
}

/**
 * `u` with what a stored `usage_extra` held put back (see usageExtra). Text that is not such an
 * object (hand-edited, or written by a newer Burnrate) adds only the keys it can read: a bad
 * value is left out, never guessed.
 */
export function withUsageExtra(u: Usage, json: string | null | undefined): Usage {
  if (!json) return u
  let x: unknown
  try {
    x = JSON.parse(json)
  } catch {
    return u
  }
  if (!isObject(x)) return u
  const out: Usage = { ...u }
  if (isCount(x.web_searches)) out.web_searches = x.web_searches
  if (isCount(x.storage_searches)) out.storage_searches = x.storage_searches
  if (isObject(x.extra)) {
    const extra = counts(x.extra)
    if (extra) out.extra = extra
  }
  // ...and the images an image tool made are priced at their image model again.
  if (isObject(x.tool_images)) {
    const images = counts(x.tool_images)
    if (images) out.tool_images = images
  }
  if (typeof x.provider_cost_usd === 'number' && Number.isFinite(x.provider_cost_usd) && x.provider_cost_usd >= 0) {
    out.provider_cost_usd = x.provider_cost_usd
  }
  // Re-pricing a batch request keeps its Batch API rates.
  if (x.batch === true) out.batch = true
  // ...and one whose batch rates are not known stays unpriced.
  if (x.batch_rate_unknown === true) out.batch_rate_unknown = true
  // ...and one its provider bills by the minute, too.
  if (x.billed_by_time === true) out.billed_by_time = true
  // ...and a call billed with the data-residency premium keeps it.
  if (x.data_residency === true) out.data_residency = true
  // ...and a call served at a fast tier is priced at its fast price again.
  if (x.fast === true) out.fast = true
  // ...and a Perplexity call pays the request fee of the search context size it ran with.
  const size = searchContextSize(x.search_context_size)
  if (size) out.search_context_size = size
  // ...and a Pro Search call, Pro Search's fee.
  if (x.pro_search === true) out.pro_search = true
  // ...and searches made with OpenAI's web_search_preview, that tool's fee.
  if (x.web_search_preview === true) out.web_search_preview = true
  // ...and a Gemini call's Google Search grounding, as pricing.google_search_grounding prices it.
  if (isCount(x.google_search_queries)) out.google_search_queries = x.google_search_queries
  if (x.google_search_grounded === true) out.google_search_grounded = true
  // ...and the parts other models ran (Claude's advisor tool) at those models' rates again.
  if (isObject(x.advisor)) {
    const parts = advisorParts(x.advisor)
    if (parts) {
      out.advisor = Object.create(null) as Record<string, ModelTokens>
      for (const m of Object.keys(parts)) out.advisor[m] = { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, ...parts[m] }
    }
  }
  return out
}

/** Each model's positive token counts (`Usage.advisor`), read as `counts` reads one; undefined when no model has one. */
function advisorParts(o: Record<string, unknown>): Record<string, Partial<ModelTokens>> | undefined {
  let out: Record<string, Partial<ModelTokens>> | undefined
  for (const m of Object.keys(o)) {
    const part = o[m]
    const c = isObject(part) ? counts(part) : undefined
    if (!c) continue
    const tokens: Partial<ModelTokens> = {}
    for (const k of TOKEN_COUNTS) if (c[k] !== undefined) tokens[k] = c[k]
    if (Object.keys(tokens).length > 0) (out ??= Object.create(null) as Record<string, Partial<ModelTokens>>)[m] = tokens
  }
  return out
}

const TOKEN_COUNTS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'cache_write_1h_tokens'] as const

/** The positive counts of `o` (keys as they are, on an object without a prototype), or undefined when it has none. */
function counts(o: Record<string, unknown>): Record<string, number> | undefined {
  let out: Record<string, number> | undefined
  for (const k of Object.keys(o)) {
    const v = o[k]
    if (isCount(v)) (out ??= Object.create(null) as Record<string, number>)[k] = v
  }
  return out
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0
}
