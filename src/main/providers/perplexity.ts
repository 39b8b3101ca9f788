import { count, isObject, reportedUsd, searchContextSize, type Usage } from '../metering/usage'
import { openaiUsage } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import { isPerplexityAsync, PerplexityAsyncMeter, perplexityAsyncShape } from './perplexity-async'
import type { Provider } from './types'

const HOST = 'https://api.perplexity.ai'
/** The Agent API's paths, which Perplexity serves under `/v1` (its Sonar API is at the root). */
const AGENT_API = /^\/(?:responses|agent)(\/|$)/
/** The search context size of a Sonar request that sets none (docs.perplexity.ai: `web_search_options.search_context_size`, default "low"). */
const DEFAULT_SEARCH_CONTEXT_SIZE = 'low'

/**
 * Perplexity: https://docs.perplexity.ai. Sonar's base URL has no `/v1`
 * (`https://api.perplexity.ai/chat/completions`); the mount `/perplexity/v1` stands for it. The
 * Agent API (OpenAI's Responses format: `POST /v1/responses`, or `/v1/agent` as Perplexity names
 * it) is under `/v1`: `…/perplexity/v1/responses` goes to `https://api.perplexity.ai/v1/responses`,
 * metered as a Responses call.
 * Sonar bills a per-request fee that depends on the search context size; the response's
 * `usage.cost.total_cost` is the whole charge and is recorded as the call's cost when present.
 * A call priced from its tokens instead (an answer without `cost`, a stream cut before its last
 * chunk brought it) pays the fee of the context size it ran with: the one its usage names
 * (`search_context_size`, in every chunk of a stream), else the one its request set
 * (`web_search_options.search_context_size`), else Perplexity's default, `low`. The price data has
 * only the highest fee of each model (../pricing/request-fees.ts). A streamed Sonar Pro request
 * for Pro Search (`web_search_options.search_type: "pro"`) priced so pays Pro Search's fee for its
 * size; its answer does not name the search type. One with `search_type: "auto"` is priced at the
 * standard fee: which search Perplexity chose shows only in the last chunk's `usage.cost`.
 *
 * Its usage reports `reasoning_tokens` and `citation_tokens` beside `completion_tokens`, not in
 * it (`total_tokens` is prompt + completion), and both are billed (Sonar Deep Research: $3/M and
 * $2/M), as are its `num_search_queries`: they are read as @pydantic/genai-prices' own Perplexity
 * extractor reads them (output, with their parts priced at their own rates, and web searches), so
 * the tokens are whole and a response without `cost` is priced in full by the library.
 *
 * Its asynchronous API (`/async/chat/completions`, for Sonar Deep Research's long runs) answers
 * the usage only when the job is polled finished: ./perplexity-async.ts.
 */

/** Sonar's `usage`: OpenAI's, with its reasoning and citation tokens, searches, context size and charge. */
function sonarUsage(raw: unknown): Usage | null {
  const u = openaiUsage(raw)
  if (!u || !isObject(raw)) return u
  const reasoning = count(raw.reasoning_tokens)
  const citation = count(raw.citation_tokens)
  if (reasoning > 0 || citation > 0) {
    u.output_tokens += reasoning + citation
    u.reasoning_tokens += reasoning
    u.extra = { ...u.extra }
    if (reasoning > 0) u.extra.output_reasoning_tokens = reasoning
    if (citation > 0) u.extra.output_citation_tokens = citation
  }
  u.web_searches = count(raw.num_search_queries)
  const size = searchContextSize(raw.search_context_size)
  if (size) u.search_context_size = size
  if (!isObject(raw.cost)) return u
  const total = reportedUsd(raw.cost.total_cost)
  if (total !== undefined) u.provider_cost_usd = total
  return u
}

const compatible = openaiCompatible({ name: 'perplexity', pricingId: 'perplexity', baseUrl: HOST, usage: sonarUsage })

export const perplexity: Provider = {
  ...compatible,
  place: (path) => (AGENT_API.test(path) ? { path: `/v1${path}`, baseUrl: HOST } : null),
  // An Agent API call's path as routed (`place` put it under `/v1`), read as OpenAI's Responses API.
  inspect: (req) => {
    const job = perplexityAsyncShape(req)
    if (job) return job
    const below = req.path.startsWith('/v1/') ? req.path.slice('/v1'.length) : ''
    if (AGENT_API.test(below)) return compatible.inspect({ ...req, path: below.replace(AGENT_API, '/responses$1') })
    const shape = compatible.inspect(req)
    // A Sonar call: the search context size it runs with, which sets its request fee.
    if (shape.endpoint === 'chat.completions') {
      const options = isObject(req.body) && isObject(req.body.web_search_options) ? req.body.web_search_options : null
      shape.searchContextSize = searchContextSize(options?.search_context_size) ?? DEFAULT_SEARCH_CONTEXT_SIZE
      // Pro Search runs only on a stream: asked for without one, the call is a standard Sonar Pro call.
      if (shape.stream && options?.search_type === 'pro') shape.proSearch = true
    }
    return shape
  },
  meter: (shape, req) => (isPerplexityAsync(shape.endpoint) ? new PerplexityAsyncMeter(shape.endpoint, req.path, sonarUsage) : compatible.meter(shape, req)),
}
