import { count, emptyUsage, isObject, type Usage } from '../metering/usage'

/**
 * OpenAI usage, either naming: Chat Completions / Completions / Embeddings
 * (`prompt_tokens`, `completion_tokens`) or Responses (`input_tokens`, `output_tokens`).
 * Cached tokens are part of the prompt count and reasoning tokens part of the output count.
 */
export function openaiUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null
  const usage = emptyUsage()
  // Audio transcriptions (whisper-1) billed by the second: `{type: "duration", seconds}`.
  if (u.type === 'duration') {
    const seconds = count(u.seconds)
    if (seconds > 0) usage.extra = { audio_seconds: seconds }
    return usage
  }
  // `input_token_details` and `output_token_details` (singular) are the audio transcriptions' and
  // the Realtime API's spelling.
  const inDetails = promptDetails(u)
  const outDetails = u.completion_tokens_details ?? u.output_tokens_details ?? u.output_token_details
  usage.input_tokens = count(u.prompt_tokens ?? u.input_tokens)
  usage.output_tokens = count(u.completion_tokens ?? u.output_tokens)
  const extra: Record<string, number> = {}
  if (isObject(inDetails)) {
    // Parts of the prompt count, never more than it (as the other providers' readers take them):
    // an answer counting more cached tokens than prompt tokens was a call the price library
    // could not split (recorded unpriced, at $0) and the team server refused (their sum is at
    // most input_tokens). What the prompt holds goes to the cached reads first. (xAI's reader
    // knows a Grok model that leaves them out of the prompt count: ./xai.ts, reportedCachedTokens.)
    usage.cache_read_tokens = Math.min(count(inDetails.cached_tokens), usage.input_tokens)
    // OpenRouter reports prompt-cache writes (Anthropic and Gemini models behind it) here.
    usage.cache_write_tokens = Math.min(count(inDetails.cache_write_tokens), usage.input_tokens - usage.cache_read_tokens)
    // gpt-image-1 (images API) and gpt-4o audio models price these parts at their own rates.
    addPart(extra, 'input_image_tokens', inDetails.image_tokens, usage.input_tokens)
    addPart(extra, 'input_audio_tokens', inDetails.audio_tokens, usage.input_tokens)
    // The Realtime API's usage names the cache's modalities (a part of each one's count); where
    // none is named, the cached tokens are text (../pricing/price.ts).
    const cached = inDetails.cached_tokens_details
    if (isObject(cached) && count(cached.audio_tokens) + count(cached.image_tokens) <= usage.cache_read_tokens) {
      addPart(extra, 'cache_audio_read_tokens', cached.audio_tokens, extra.input_audio_tokens ?? 0)
      addPart(extra, 'cache_image_read_tokens', cached.image_tokens, extra.input_image_tokens ?? 0)
    }
  }
  if (isObject(outDetails)) {
    usage.reasoning_tokens = count(outDetails.reasoning_tokens)
    // xAI (Grok) reports reasoning tokens beside `completion_tokens`, not inside it
    // (`total_tokens` = prompt + completion + reasoning); they are billed as output all the same.
    const total = count(u.total_tokens)
    const r = usage.reasoning_tokens
    if (r > 0 && total > 0 && total === usage.input_tokens + usage.output_tokens + r) usage.output_tokens += r
    addPart(extra, 'output_image_tokens', outDetails.image_tokens, usage.output_tokens)
    addPart(extra, 'output_audio_tokens', outDetails.audio_tokens, usage.output_tokens)
  }
  if (Object.keys(extra).length > 0) usage.extra = extra
  return usage
}

/** The prompt's details (`input_token_details` and `input_tokens_details`: the Realtime API's and Responses' spellings). */
function promptDetails(u: Record<string, unknown>): unknown {
  return u.prompt_tokens_details ?? u.input_tokens_details ?? u.input_token_details
}

/** The cached prompt tokens an OpenAI-style usage reports, as it reports them (`openaiUsage` limits them to the prompt count). */
export function reportedCachedTokens(u: unknown): number {
  const d = isObject(u) ? promptDetails(u) : undefined
  return isObject(d) ? count(d.cached_tokens) : 0
}

function addPart(extra: Record<string, number>, key: string, v: unknown, whole: number): void {
  const n = count(v)
  if (n > 0 && n <= whole) extra[key] = n
}

/**
 * A transcription or translation answered without usage (Groq's whisper, whose answers carry
 * none): as `verbose_json` it says how long the audio was (`duration`, in seconds), which is what
 * it is billed by. Null when it does not (`json`, `text`).
 */
export function durationUsage(body: Record<string, unknown>): Usage | null {
  const seconds = count(body.duration)
  if (seconds === 0) return null
  const usage = emptyUsage()
  usage.extra = { audio_seconds: seconds }
  return usage
}

/**
 * Image generation and edits (`/images/*`): everything the model outputs is image tokens; the
 * response's usage has no output breakdown for gpt-image-1, so all of `output_tokens` is priced
 * at the image-output rate (which for gpt-image-1 is its only output rate).
 */
export function imageUsage(raw: unknown): Usage | null {
  const u = openaiUsage(raw)
  if (u && u.output_tokens > 0 && !u.extra?.output_image_tokens) {
    u.extra = { ...u.extra, output_image_tokens: u.output_tokens }
  }
  return u
}

/**
 * The Responses API's server-side tool calls billed per call, counted from the response's
 * `output` items into `usage` (the usage object does not count them): a `web_search_call` whose
 * action is a search (an `open_page` or `find_in_page` action is not billed; an item without an
 * action, as `web_search_preview` answers, is one search) and a `file_search_call`. Priced by
 * @pydantic/genai-prices as `web_searches` and `storage_searches`. Searches made with the
 * `web_search_preview` tool, which the response's `tools` names, are marked so
 * (`Usage.web_search_preview`): that tool costs more on a non-reasoning model
 * (../pricing/tool-fees.ts).
 */
export function addToolCalls(usage: Usage, response: Record<string, any>): void {
  const output = response.output
  if (!Array.isArray(output)) return
  let web = 0
  let file = 0
  for (const item of output) {
    const kind = searchKind(item)
    if (kind === 'web') web++
    else if (kind === 'file') file++
  }
  usage.web_searches = web
  usage.storage_searches = file
  if (web > 0 && previewSearch(response.tools)) usage.web_search_preview = true
}

/**
 * What an output item of a Response is billed as per call: `web`, a `web_search_call` whose action
 * is a search (`open_page` and `find_in_page` are not billed); `file`, a `file_search_call`; else null.
 */
export function searchKind(item: unknown): 'web' | 'file' | null {
  if (!isObject(item)) return null
  if (item.type === 'web_search_call') {
    const action = item.action
    return !isObject(action) || action.type === undefined || action.type === 'search' ? 'web' : null
  }
  return item.type === 'file_search_call' ? 'file' : null
}

/**
 * Whether the web search tool a response declares (echoed in its `tools`) is `web_search_preview`
 * (or a dated version of it, `web_search_preview_2025_03_11`). Were the GA `web_search` declared
 * beside it, which one searched is not said: the searches are priced as the GA tool's.
 */
export function previewSearch(tools: unknown): boolean {
  if (!Array.isArray(tools)) return false
  let preview = false
  for (const t of tools) {
    const type = isObject(t) ? t.type : undefined
    if (typeof type !== 'string' || !type.startsWith('web_search')) continue
    if (!type.startsWith('web_search_preview')) return false
    preview = true
  }
  return preview
}

/** Reads a provider's usage object; OpenAI's reading unless a provider needs its own. */
export type UsageReader = (raw: unknown) => Usage | null
