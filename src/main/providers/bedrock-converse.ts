import type { IncomingHttpHeaders } from 'node:http'
import { type CutJsonShape, readCutJson } from '../metering/cut-json'
import { OutputText } from '../metering/output-text'
import { count, emptyUsage, isObject, type Usage } from '../metering/usage'
import { exceptionType } from './bedrock-event-stream'
import type { AskedSpeed } from './bedrock-paths'
import type { Meter, MeterResult } from './types'

/**
 * Bedrock's Converse API (`/model/{id}/converse`, `/converse-stream`), the one format every
 * model answers in: its `usage` (also the shape of Bedrock's own count of an InvokeModel call,
 * ./bedrock-invoke.ts), the text of its stream's deltas (for the estimate of a cut stream; Nova's
 * InvokeModel stream sends them too), and its meter.
 */

/**
 * Converse's `usage`, normalised: its `inputTokens` leaves out cache reads and writes, as
 * Anthropic's does; `cacheDetails` tells the cache writes of 1 hour (billed higher) from those of
 * 5 minutes.
 */
export function converseUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null
  const out = emptyUsage()
  out.cache_read_tokens = count(u.cacheReadInputTokens)
  out.cache_write_tokens = count(u.cacheWriteInputTokens)
  if (Array.isArray(u.cacheDetails)) {
    let hour = 0
    for (const d of u.cacheDetails) if (isObject(d) && d.ttl === '1h') hour += count(d.inputTokens)
    out.cache_write_1h_tokens = Math.min(hour, out.cache_write_tokens)
  }
  out.input_tokens = count(u.inputTokens) + out.cache_read_tokens + out.cache_write_tokens
  out.output_tokens = count(u.outputTokens)
  return out
}

/**
 * Whether a Bedrock answer says its Priority tier served it: Converse's `serviceTier` (`{type:
 * "priority"}`, in the answer and in a stream's `metadata` event) or InvokeModel's
 * `X-Amzn-Bedrock-Service-Tier` header (`priority`), what the request's tier (Claude Code's
 * `ANTHROPIC_BEDROCK_SERVICE_TIER`, sent as that header) asked for. Priority costs more than the
 * standard tier, by model; the price data has no such prices: such a call is marked fast
 * (`Usage.fast`), priced by a `pricing.overrides` entry with `speed: fast` when there is one, else at
 * the standard rate with a warning (../pricing/price.ts).
 */
export function servedPriority(tier: unknown): boolean {
  const t = tierName(tier)
  return t !== undefined && t.toLowerCase() === 'priority'
}

/** Whether an answer's `X-Amzn-Bedrock-Service-Tier` (or its body's tier) names a tier, whichever: then its estimate is at that tier, not the one asked for. */
export function namesTier(tier: unknown): boolean {
  return tierName(tier) !== undefined
}

/** The tier a header or body field names, trimmed; undefined when it names none. */
function tierName(tier: unknown): string | undefined {
  const t = isObject(tier) ? tier.type : Array.isArray(tier) ? tier[0] : tier
  return typeof t === 'string' && t.trim() !== '' ? t.trim() : undefined
}

/**
 * The text of a Converse `contentBlockDelta`'s delta (ConverseStream, and Nova's InvokeModel
 * stream): its text, reasoning, or a tool call's input (its JSON, in pieces: a file an agent writes).
 */
export function converseDeltaText(d: unknown): unknown {
  if (!isObject(d)) return undefined
  return d.text ?? (isObject(d.reasoningContent) ? d.reasoningContent.text : undefined) ?? (isObject(d.toolUse) ? d.toolUse.input : undefined)
}

/** A Converse answer's output text: its content blocks' `text`, a reasoning block's `reasoningText.text` too. */
const CONVERSE_TEXT_KEYS: ReadonlySet<string> = new Set(['text'])
/** Its `toolUse` blocks' `input`: output, read as JSON text (as a stream's `toolUse.input` pieces are). */
const CONVERSE_CUT_SHAPE: CutJsonShape = { objects: new Set(['input']) }

/** Converse: the answer's `usage`, or a stream's `metadata` event (its last); `messageStop` ends the turn. */
export class ConverseMeter implements Meter {
  private usage: Usage | null = null
  private complete = false
  private text = new OutputText()
  /** One of the model's events arrived (`messageStart` first). */
  private started = false
  /** The stream's exception message's type (`exceptionType`). */
  private error: string | undefined
  /** The answer said its Priority tier served it (`servedPriority`). */
  private priority = false
  /** The answer's headers named the tier that served it (`X-Amzn-Bedrock-Service-Tier`), whichever. */
  private tierNamed = false

  /**
   * @param asked what the request asked for beyond the standard tier: an answer that ends before
   *   its usage (a stream cut before its `metadata` event, a body cut before its end) never said
   *   which tier or speed served it, and its estimate is taken at what was asked, as the
   *   reservation was: Claude's fast mode (`additionalModelRequestFields.speed: "fast"`) as asked,
   *   the Priority tier (its `serviceTier`, or the `X-Amzn-Bedrock-Service-Tier` header) as asked
   *   unless its headers named the tier.
   */
  constructor(private readonly asked: AskedSpeed = { fastMode: false, priority: false }) {}

  headers(h: IncomingHttpHeaders): void {
    const tier = h['x-amzn-bedrock-service-tier']
    this.tierNamed = namesTier(tier)
    if (servedPriority(tier)) this.priority = true
  }

  event(type: string, payload: string): void {
    const error = exceptionType(type)
    if (error) {
      this.error ??= error
      this.complete = true
      return
    }
    this.started = true
    if (type === 'contentBlockDelta') {
      // Only read should the stream end without its usage (estimated from what it streamed).
      if (this.usage) return
      try {
        const t = converseDeltaText((JSON.parse(payload) as { delta?: unknown }).delta)
        if (typeof t === 'string') this.text.push(t)
      } catch {
        // not JSON: nothing to read
      }
    } else if (type === 'messageStop') {
      this.complete = true
    } else if (type === 'metadata') {
      try {
        const m = JSON.parse(payload) as { usage?: unknown; serviceTier?: unknown }
        const u = converseUsage(m?.usage)
        if (u) this.usage = u
        if (servedPriority(m?.serviceTier)) this.priority = true
      } catch {
        // not JSON: no usage
      }
    }
  }

  json(body: unknown): void {
    if (!isObject(body)) return
    this.usage = converseUsage(body.usage)
    this.priority = servedPriority(body.serviceTier)
    this.complete = true
  }

  /**
   * An answer cut mid-body: the text (and reasoning) of its content blocks, and its tool calls'
   * `input` as JSON text, that arrived, for the estimate; a `usage` that arrived whole is the bill.
   */
  jsonCut(body: string): void {
    const cut = readCutJson(body, CONVERSE_TEXT_KEYS, CONVERSE_CUT_SHAPE)
    this.usage = converseUsage(cut.usage)
    if (!this.usage) this.text = cut.text
  }

  result(): MeterResult {
    const error = this.error
    if (error && !this.started) return { usage: emptyUsage(), complete: true, error }
    if (this.usage) return { usage: this.priority ? { ...this.usage, fast: true } : this.usage, complete: this.complete, error }
    const billedSoFar = this.asked.fastMode || (this.tierNamed ? this.priority : this.asked.priority) ? { fast: true } : undefined
    return { usage: null, complete: this.complete, outputText: this.text.join(''), outputScale: this.text.scale, error, billedSoFar }
  }
}
