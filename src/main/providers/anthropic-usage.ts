import { count, emptyUsage, isObject, type ModelTokens, type Usage } from '../metering/usage'
import { openaiUsage } from './openai-usage'

/**
 * What an Anthropic Messages answer says it used (its `usage`, and the `iterations` an advisor
 * or a compaction adds), as Burnrate's usage; and the usage of Anthropic's OpenAI-compatible answers.
 */

/** Raw Anthropic usage counters; `input_tokens` here excludes cache reads and writes. */
export interface RawUsage {
  input: number
  cacheWrite: number
  cacheWrite1h: number
  cacheRead: number
  output: number
  webSearches: number
  /** The answer says it ran in the US only (`inference_geo: "us"`): billed with the data-residency premium. */
  usOnly: boolean
  /** The answer says fast mode served it (`speed: "fast"`). */
  fast: boolean
  /** The parts of the counts above that the advisor tool's models ran, by model (`Usage.advisor`). */
  advisor?: Record<string, RawUsage>
}

function noUsage(): RawUsage {
  return { input: 0, cacheWrite: 0, cacheWrite1h: 0, cacheRead: 0, output: 0, webSearches: 0, usOnly: false, fast: false }
}

function addTokens(to: RawUsage, r: RawUsage): void {
  to.input += r.input
  to.cacheWrite += r.cacheWrite
  to.cacheWrite1h += r.cacheWrite1h
  to.cacheRead += r.cacheRead
  to.output += r.output
}

/** An advisor model's name as kept (a key of `Usage.advisor`, from the answer): an Anthropic model id. */
const ADVISOR_MODEL = /^[\w.:@-]{1,100}$/
/** Advisor models kept apart in one answer; the tokens of any other stay at the executor's rates. */
const MAX_ADVISORS = 4

export function rawUsage(u: Record<string, any>, into?: RawUsage): RawUsage {
  const r: RawUsage = into ?? noUsage()
  // Fields present override (message_delta repeats or updates what message_start said). A field
  // sent as null says nothing (the SDK types them `number | null` and keeps the earlier value):
  // it must not erase what message_start counted.
  if (u.input_tokens != null) r.input = count(u.input_tokens)
  if (u.cache_creation_input_tokens != null) r.cacheWrite = count(u.cache_creation_input_tokens)
  if (u.cache_read_input_tokens != null) r.cacheRead = count(u.cache_read_input_tokens)
  if (u.output_tokens != null) r.output = count(u.output_tokens)
  if (isObject(u.cache_creation) && u.cache_creation.ephemeral_1h_input_tokens != null) r.cacheWrite1h = count(u.cache_creation.ephemeral_1h_input_tokens)
  if (isObject(u.server_tool_use) && u.server_tool_use.web_search_requests != null) {
    r.webSearches = count(u.server_tool_use.web_search_requests)
  }
  // Where inference ran (Claude Opus 4.6 and later; the request's `inference_geo` or the
  // workspace's default): US-only inference costs 1.1x every token price, the default `global` not.
  if ('inference_geo' in u) r.usOnly = u.inference_geo === 'us'
  if ('speed' in u) r.fast = u.speed === 'fast'
  return r
}

/**
 * With context compaction, the top-level usage covers only the last sampling iteration;
 * `usage.iterations` lists every iteration (the compaction summary included), and all of them
 * are billed, so their sum is the call's usage. The advisor tool's consultations are iterations
 * too (`advisor_message`, not in the top-level usage), each naming the model that ran it and
 * billed at that model's rates: their part of the sum is kept by model (`advisor`).
 */
export function iterationsSum(iterations: unknown): RawUsage | null {
  if (!Array.isArray(iterations) || iterations.length === 0) return null
  const sum = noUsage()
  for (const it of iterations) {
    if (!isObject(it)) continue
    const r = rawUsage(it)
    addTokens(sum, r)
    const model = it.type === 'advisor_message' && typeof it.model === 'string' && ADVISOR_MODEL.test(it.model) ? it.model : undefined
    if (model === undefined) continue
    const parts = (sum.advisor ??= Object.create(null) as Record<string, RawUsage>)
    if (!parts[model] && Object.keys(parts).length >= MAX_ADVISORS) continue
    addTokens((parts[model] ??= noUsage()), r)
  }
  return sum
}

/**
 * The iterations' sum with what only the top-level usage tells (web searches, where inference
 * ran, the speed), which counts for the whole call.
 */
export function withTopLevel(sum: RawUsage, top: RawUsage): RawUsage {
  sum.webSearches = top.webSearches
  sum.usOnly = top.usOnly
  sum.fast = top.fast
  return sum
}

/** Sets `u`'s token counts from `r`'s (Anthropic's `input_tokens` excludes the cache reads and writes; the ledger's includes them). */
function setTokens(u: ModelTokens, r: RawUsage): void {
  u.input_tokens = r.input + r.cacheWrite + r.cacheRead
  u.cache_read_tokens = r.cacheRead
  u.cache_write_tokens = r.cacheWrite
  u.cache_write_1h_tokens = Math.min(r.cacheWrite1h, r.cacheWrite)
  u.output_tokens = r.output
}

export function normalise(r: RawUsage): Usage {
  const u = emptyUsage()
  setTokens(u, r)
  if (r.advisor) {
    u.advisor = Object.create(null) as Record<string, ModelTokens>
    for (const model of Object.keys(r.advisor)) setTokens((u.advisor[model] = {} as ModelTokens), r.advisor[model]!)
  }
  u.web_searches = r.webSearches
  if (r.usOnly) u.data_residency = true
  if (r.fast) u.fast = true
  return u
}

export function anthropicUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null
  const r = rawUsage(u)
  const it = iterationsSum(u.iterations)
  return normalise(it ? withTopLevel(it, r) : r)
}

/**
 * The usage of Anthropic's OpenAI-compatible answers, read as @pydantic/genai-prices' Anthropic
 * `chat` extractor reads it: OpenAI's fields, with cache reads as a top-level `cached_tokens`
 * where `prompt_tokens_details` does not give them.
 */
export function anthropicCompatUsage(raw: unknown): Usage | null {
  const u = openaiUsage(raw)
  if (u && isObject(raw) && u.cache_read_tokens === 0) u.cache_read_tokens = Math.min(count(raw.cached_tokens), u.input_tokens)
  return u
}
