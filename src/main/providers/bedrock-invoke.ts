import type { IncomingHttpHeaders } from 'node:http'
import { readCutJson } from '../metering/cut-json'
import { OutputText } from '../metering/output-text'
import { emptyUsage, isObject, type Usage } from '../metering/usage'
import { AnthropicMeter } from './anthropic-meter'
import { converseDeltaText, converseUsage, namesTier, servedPriority } from './bedrock-converse'
import { chunkEvent, exceptionType } from './bedrock-event-stream'
import type { AskedSpeed } from './bedrock-paths'
import { choicesText } from './openai-stream-text'
import type { Meter, MeterResult } from './types'

/**
 * Bedrock's InvokeModel API (`/model/{id}/invoke`, `/invoke-with-response-stream`), which answers
 * in the model's own format: a Claude model's answer is read as Anthropic's, another model's
 * streamed text only for an estimate, and Bedrock's own count of the call (in the answer's headers,
 * or a stream's last event) stands in for the usage the answer does not give.
 */

const METRICS = 'amazon-bedrock-invocationMetrics'

/**
 * Another model's answer's output text, cut (`InvokeMeter.jsonCut`): Llama's `generation`, Titan's
 * `outputText`, Mistral's, Cohere's and Nova's `text`, an OpenAI-format model's message `content`,
 * `reasoning_content` and tool calls' `arguments`.
 */
const OTHER_TEXT_KEYS: ReadonlySet<string> = new Set(['generation', 'outputText', 'text', 'content', 'reasoning_content', 'arguments'])

/**
 * InvokeModel: a Claude model's answer is Anthropic's, its stream's events inside Bedrock's
 * `chunk` messages. For any model, Bedrock also counts the call itself: a JSON answer in its
 * headers (`X-Amzn-Bedrock-Input-Token-Count`, `-Output-Token-Count`, and the cache reads and
 * writes), a stream in its last event (`amazon-bedrock-invocationMetrics`: input and output
 * tokens, and the cache reads and writes). That count is used when the answer's own carries none (other models' usage
 * is not read, only their streamed text, for a stream cut before the count); a Claude answer's own usage wins (it
 * tells 1-hour cache writes apart).
 */
export class InvokeMeter implements Meter {
  private readonly inner: AnthropicMeter
  private metrics: Usage | null = null
  private counted: Usage | null = null
  /** A whole JSON answer was read (the call completed), whoever's format it was in. */
  private whole = false
  /** A `chunk` (one of the model's events) arrived. */
  private started = false
  /** The stream's exception message's type (`exceptionType`). */
  private error: string | undefined
  /** Another model's streamed text (`otherText`), for the estimate of a stream cut before Bedrock's count. */
  private text = new OutputText()
  /** The answer's headers say its Priority tier served it (`servedPriority`). */
  private priority = false
  /** The answer's headers name the tier that served it (`X-Amzn-Bedrock-Service-Tier`), whichever. */
  private tierNamed = false

  /**
   * @param claude the path names a Claude model.
   * @param pathNamed the path names the model (not an unmapped application inference profile):
   *   its id prices the call, else the answer's name for the model does.
   * @param asked what the request asked for beyond the standard tier: an answer that ends
   *   before its usage (a stream cut before `message_start`, a body cut before its end) is
   *   estimated at fast mode when it asked for it (as the Claude API's is), and at the Priority
   *   tier when its headers say that tier served it or, naming none, it asked for it.
   */
  constructor(
    private readonly claude: boolean,
    private readonly pathNamed = true,
    private readonly asked: AskedSpeed = { fastMode: false, priority: false },
  ) {
    this.inner = new AnthropicMeter(asked.fastMode)
  }

  headers(h: IncomingHttpHeaders): void {
    this.counted = headerUsage(h)
    const tier = h['x-amzn-bedrock-service-tier']
    this.priority = servedPriority(tier)
    this.tierNamed = namesTier(tier)
  }

  event(type: string, payload: string): void {
    const error = exceptionType(type)
    if (error) {
      this.error ??= error
      return
    }
    if (type !== 'chunk') return
    this.started = true
    const text = chunkEvent(payload)
    if (text === undefined) return
    this.inner.event('', text)
    if (text.includes(METRICS)) this.metrics = metricsUsage(text)
    else if (!this.claude) this.otherText(text)
  }

  /**
   * The text of another model's event (none of it is Anthropic's shape): Llama's `generation`,
   * Mistral's `outputs[].text`, Titan's `outputText`, Cohere's `text`, Nova's `contentBlockDelta`
   * (text, reasoning, a tool's input), an OpenAI-format model's chunk (gpt-oss, DeepSeek).
   */
  private otherText(json: string): void {
    let o: unknown
    try {
      o = JSON.parse(json)
    } catch {
      return
    }
    if (!isObject(o)) return
    const push = (v: unknown) => {
      if (typeof v === 'string') this.text.push(v)
    }
    push(o.generation)
    push(o.outputText)
    push(o.text)
    if (Array.isArray(o.outputs)) for (const x of o.outputs) push(x?.text)
    if (isObject(o.contentBlockDelta)) push(converseDeltaText(o.contentBlockDelta.delta))
    if (Array.isArray(o.choices)) choicesText(o.choices, this.text)
  }

  json(body: unknown): void {
    this.whole = true
    // Other models' answers have a `usage` of their own shape (Nova's `inputTokens`, gpt-oss's
    // `prompt_tokens`), which Anthropic's reader would take for zero tokens and so hide Bedrock's
    // count in the headers: only a Claude answer is read as Anthropic's.
    if (this.claude || (isObject(body) && hasAnthropicUsage(body.usage))) this.inner.json(body)
  }

  /**
   * An answer cut mid-body: a Claude model's read as Anthropic's is; another model's text fields
   * that arrived (as `otherText` reads its events) for the estimate. Bedrock's count in the
   * headers, when it sent one, is still the bill.
   */
  jsonCut(body: string): void {
    if (this.claude) this.inner.jsonCut(body)
    else this.text = readCutJson(body, OTHER_TEXT_KEYS).text
  }

  result(): MeterResult {
    const r = this.counts()
    // Served at the Priority tier: its usage is billed at the model's priority price (`servedPriority`).
    if (r.usage) return this.priority && !r.usage.fast && r.usage.input_tokens + r.usage.output_tokens > 0 ? { ...r, usage: { ...r.usage, fast: true } } : r
    // No usage (an estimate): at the Priority tier its headers named, else the one it asked for.
    const priority = this.tierNamed ? this.priority : this.asked.priority
    return priority && !r.billedSoFar?.fast ? { ...r, billedSoFar: { ...r.billedSoFar, fast: true } } : r
  }

  private counts(): MeterResult {
    if (this.error && !this.started) return { usage: emptyUsage(), complete: true, error: this.error }
    // The path's model id decides the price (a cross-region or global profile), not the answer's
    // name for the model, unless the path names none (an application inference profile).
    const { model: named, ...r } = this.inner.result()
    const model = this.pathNamed ? undefined : named
    const complete = r.complete || this.whole || this.error !== undefined
    const error = r.error ?? this.error
    if (!r.usage && this.metrics) return { usage: this.metrics, complete: true, error }
    if (!r.usage && this.counted) return { usage: this.counted, responseId: r.responseId, complete, error }
    // Cut before Bedrock's count: another model's stream is estimated from the text it streamed.
    if (!r.usage && !r.outputText && this.text.length > 0) return { ...r, model, complete, error, outputText: this.text.join(''), outputScale: this.text.scale }
    return { ...r, model, complete, error }
  }
}

/**
 * A Claude model's id (`anthropic.claude-…`, or one of its cross-region or global profiles,
 * `us.anthropic.claude-…`). An application inference profile's ARN names no model: its answer's
 * usage tells (`hasAnthropicUsage`).
 */
export function isClaude(model: string): boolean {
  return /^(?:[a-z-]+\.)?anthropic\./.test(model)
}

/** Anthropic's `usage` (`input_tokens`, `output_tokens`), not another model's own shape. */
function hasAnthropicUsage(u: unknown): boolean {
  return isObject(u) && (typeof u.input_tokens === 'number' || typeof u.output_tokens === 'number')
}

/**
 * Bedrock's own count of an InvokeModel call, from its answer's headers (null when it sent
 * none): the same counts as Converse's `usage`, read as it is.
 */
function headerUsage(h: IncomingHttpHeaders): Usage | null {
  const input = h['x-amzn-bedrock-input-token-count']
  if (typeof input !== 'string') return null
  const n = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v.trim()) : 0)
  return converseUsage({
    inputTokens: n(input),
    outputTokens: n(h['x-amzn-bedrock-output-token-count']),
    cacheReadInputTokens: n(h['x-amzn-bedrock-cache-read-input-token-count']),
    cacheWriteInputTokens: n(h['x-amzn-bedrock-cache-write-input-token-count']),
  })
}

/**
 * Bedrock's own count of a stream, from its last event's invocation metrics: its
 * `inputTokenCount` leaves out the cache reads and writes it counts beside it, as the headers do.
 */
function metricsUsage(text: string): Usage | null {
  try {
    const m = (JSON.parse(text) as Record<string, unknown>)[METRICS]
    if (!isObject(m)) return null
    return converseUsage({
      inputTokens: m.inputTokenCount,
      outputTokens: m.outputTokenCount,
      cacheReadInputTokens: m.cacheReadInputTokenCount,
      cacheWriteInputTokens: m.cacheWriteInputTokenCount,
    })
  } catch {
    return null
  }
}
