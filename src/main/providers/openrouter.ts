import { isObject, reportedUsd } from '../metering/usage'
import { inspectAnthropic } from './anthropic'
import { AnthropicMeter } from './anthropic-meter'
import { OpenAIMeter } from './openai-meter'
import { openaiUsage, type UsageReader } from './openai-usage'
import { openaiCompatible } from './openai-compatible'
import type { Meter, MeterResult, Provider } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * OpenRouter: https://openrouter.ai/docs. Every response's usage carries `cost`, the credits
 * (USD) OpenRouter charged for the call; that is recorded as the call's cost. With a
 * bring-your-own-key upstream, `cost` is only OpenRouter's fee and the provider's own charge
 * is `cost_details.upstream_inference_cost`, so the two are added.
 *
 * Besides its OpenAI-compatible API, OpenRouter answers Anthropic's Messages API at
 * `/api/v1/messages`: what Claude Code calls with `ANTHROPIC_BASE_URL=https://openrouter.ai/api`
 * (OpenRouter's documented setup), so through Burnrate `…/openrouter`. Those calls are read as
 * Anthropic's are, and OpenRouter's `usage.cost`, when it sends one, is the charge.
 */
/** OpenAI's `usage`, with OpenRouter's `cost` (the charge) beside it. */
const compatibleUsage: UsageReader = (raw) => {
  const u = openaiUsage(raw)
  const cost = reportedCost(raw)
  if (u && cost !== undefined) u.provider_cost_usd = cost
  return u
}

const compatible = openaiCompatible({ name: 'openrouter', pricingId: 'openrouter', baseUrl: 'https://openrouter.ai/api/v1', usage: compatibleUsage })

export const openrouter: Provider = {
  ...compatible,
  inspect: (req) => {
    const shape = req.method === 'POST' && withoutTrailingSlashes(req.path) === '/messages' ? inspectAnthropic({ ...req, path: '/v1/messages' }) : compatible.inspect(req)
    if (shape.billable && (shape.endpoint === 'messages' || shape.endpoint === 'chat.completions') && asksForFast(req.body)) shape.fast = true
    return shape
  },
  meter: (shape, req) =>
    shape.endpoint === 'messages'
      ? new MessagesMeter(shape.model, shape.fast === true)
      : shape.endpoint === 'chat.completions' && shape.fast
        ? new AskedFastMeter({ endpoint: shape.endpoint, usage: compatibleUsage })
        : compatible.meter(shape, req),
}

/**
 * OpenRouter's fast tier (openrouter.ai/docs/guides/features/service-tiers: Claude's fast mode,
 * which it once sold as `…-fast` models), asked with `service_tier: "fast"` on either API, or the
 * Messages API's own `speed: "fast"` (read by `inspectAnthropic`): budgets reserve the call at the
 * model's fast price (a `speed: fast` override), and an answer cut before it said what it cost is
 * estimated at it. A whole answer's `cost` is the charge, whatever its speed.
 */
function asksForFast(body: unknown): boolean {
  return isObject(body) && body.service_tier === 'fast'
}

/** What OpenRouter says it charged in a `usage` object (its fee plus the upstream's with a BYOK key), or undefined. */
function reportedCost(raw: unknown): number | undefined {
  if (!isObject(raw)) return undefined
  const cost = reportedUsd(raw.cost)
  if (cost === undefined) return undefined
  const upstream = raw.is_byok === true && isObject(raw.cost_details) ? reportedUsd(raw.cost_details.upstream_inference_cost) : undefined
  return upstream === undefined ? cost : cost + upstream
}

/** Anthropic's Messages API as OpenRouter answers it: Anthropic's usage, and OpenRouter's `cost` beside it. */
class MessagesMeter implements Meter {
  private readonly inner: AnthropicMeter
  private cost: number | undefined

  /**
   * @param requested the model the request names.
   * @param askedFast the request asked for fast mode (`CallShape.fast`): an answer cut before its usage is estimated at it.
   */
  constructor(
    private readonly requested: string,
    askedFast = false,
  ) {
    this.inner = new AnthropicMeter(askedFast)
  }

  event(name: string, data: string): void {
    this.inner.event(name, data)
    // Only an event that names a cost is parsed twice (the final `message_delta`).
    if (!data.includes('"cost"')) return
    try {
      const ev = JSON.parse(data) as unknown
      if (!isObject(ev)) return
      const cost = reportedCost(ev.usage) ?? (isObject(ev.message) ? reportedCost(ev.message.usage) : undefined)
      if (cost !== undefined) this.cost = cost
    } catch {
      // not JSON: no cost
    }
  }

  json(body: unknown): void {
    this.inner.json(body)
    if (isObject(body)) this.cost = reportedCost(body.usage)
  }

  /** A JSON answer cut mid-body: read as Anthropic's is; the cost of a usage that arrived whole is the charge. */
  jsonCut(body: string): void {
    this.cost = reportedCost(this.inner.jsonCut(body))
  }

  result(): MeterResult {
    const r = this.inner.result()
    // A stream cut before its last usage has no final charge: it is priced from its (estimated) tokens.
    if (r.usage && !r.partialOutput && this.cost !== undefined) r.usage = { ...r.usage, provider_cost_usd: this.cost }
    // OpenRouter's price data knows its own slugs (`anthropic/claude-sonnet-4.5`), not an
    // upstream's bare id (`claude-sonnet-4-5-20250929`): an answer naming one leaves the
    // request's slug to price the call.
    if (r.model && !r.model.includes('/') && this.requested.includes('/')) return { ...r, model: undefined }
    return r
  }
}

/** A Chat Completions answer to a request that asked for the fast tier: one that ends before its usage is estimated at the fast price (`asksForFast`). */
class AskedFastMeter extends OpenAIMeter {
  override result(): MeterResult {
    const r = super.result()
    return r.usage ? r : { ...r, billedSoFar: { ...r.billedSoFar, fast: true } }
  }
}
