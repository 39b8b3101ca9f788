import { count, isObject, reportedUsd, type Usage } from '../metering/usage'
import { openaiUsage, reportedCachedTokens } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { Provider } from './types'
import { XaiBatchResultsMeter, xaiBatchIdOf, xaiBatchShape } from './xai-batch'
import { isXaiVideo, XaiVideoMeter, xaiVideoShape } from './xai-video'

/** xAI's unit of charge: 1 USD is 10^10 ticks. */
const TICKS_PER_USD = 1e10
/** xAI's other unit of charge (`cost_in_nano_usd`): 1 USD is 10^9 nano. */
const NANO_PER_USD = 1e9

/**
 * xAI's `usage`: OpenAI's, and `cost_in_usd_ticks`, what xAI billed for the call after its cache
 * discounts and with its server-side tools (web and X search, code execution: billed per call,
 * and absent from the price data), https://docs.x.ai/developers/cost-tracking: that is the
 * call's cost. Every answer's usage carries it (Chat Completions and Responses, streamed or not,
 * image generation, and a finished video's status). Responses' usage (`ModelUsage` in xAI's
 * OpenAPI, https://api.x.ai/api-docs/openapi.json) has both charges optional, the other being
 * `cost_in_nano_usd` (10^9 to the dollar); without ticks, that is the cost, as xAI's TypeScript SDK
 * (xai-org/xai-sdk-ts src/usage.ts) reads it: ticks first, then nano, each divided once.
 */
export function xaiUsage(raw: unknown): Usage | null {
  const u = openaiUsage(raw)
  if (!u || !isObject(raw)) return u
  withUncountedCache(u, reportedCachedTokens(raw), count(raw.total_tokens))
  const ticks = reportedUsd(raw.cost_in_usd_ticks)
  const nano = reportedUsd(raw.cost_in_nano_usd)
  if (ticks !== undefined) u.provider_cost_usd = ticks / TICKS_PER_USD
  else if (nano !== undefined) u.provider_cost_usd = nano / NANO_PER_USD
  return u
}

const compatible = openaiCompatible({
  name: 'xai',
  pricingId: 'x-ai',
  baseUrl: 'https://api.x.ai/v1',
  usage: xaiUsage,
})

/**
 * xAI (Grok): https://docs.x.ai/docs/api-reference. Its reasoning tokens are reported beside
 * `completion_tokens` (see `openaiUsage`). Its video generation, asynchronous, is metered apart
 * (./xai-video.ts); its Batch API's own reads and cancel are free for budget rules, and its results
 * are metered, each request a call (./xai-batch.ts).
 */
export const xai: Provider = {
  ...compatible,
  inspect: (req) => xaiVideoShape(req) ?? xaiBatchShape(req) ?? compatible.inspect(req),
  meter: (shape, req) =>
    isXaiVideo(shape.endpoint)
      ? new XaiVideoMeter(shape.endpoint, req.path, xaiUsage)
      : shape.endpoint === 'batches.results'
        ? new XaiBatchResultsMeter(xaiBatchIdOf(req.path), xaiUsage)
        : compatible.meter(shape, req),
}

/**
 * Some Grok models (grok-4-1-fast-non-reasoning) report a prompt count without its cached part:
 * `cached_tokens` is then more than `prompt_tokens`, and `total_tokens` counts both. The cached
 * tokens are added to the prompt (of which they are a part, as everywhere else), and reasoning
 * reported beside `completion_tokens` is found against that total as `openaiUsage` finds it
 * against OpenAI's.
 */
function withUncountedCache(u: Usage, cached: number, total: number): void {
  if (cached <= u.input_tokens) return
  u.input_tokens += cached
  u.cache_read_tokens = cached
  const r = u.reasoning_tokens
  if (r > 0 && total > 0 && total === u.input_tokens + u.output_tokens + r) u.output_tokens += r
}
