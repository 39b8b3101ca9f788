import { type CutJsonShape, readCutJson } from '../metering/cut-json'
import { OutputText } from '../metering/output-text'
import { isObject, parseObject } from '../metering/usage'
import { type RawUsage, iterationsSum, normalise, rawUsage, withTopLevel } from './anthropic-usage'
import type { Meter, MeterResult } from './types'

/**
 * False only when `data`'s `type` cannot be a `message_*` type, whatever else it holds: without a
 * `\u` escape (the only way JSON can spell a letter other than as itself) every string in it,
 * a last duplicate `type` included, is written as it reads, so `message_` would appear. An event
 * it says false for does nothing in the meter once the usage is known; parsing it would find the same.
 */
export function mayBeMessageEvent(data: string): boolean {
  return data.includes('message_') || data.includes('\\u')
}

/** Characters of unparsed events a stream keeps until its final usage arrives (see `AnthropicMeter.pending`). */
const MAX_PENDING_CHARS = 1_000_000

/** The text a `content_block_delta` event streamed (text, tool input JSON, thinking), or undefined. */
function deltaText(ev: Record<string, any>): string | undefined {
  if (ev.type !== 'content_block_delta' || !isObject(ev.delta)) return undefined
  const d = ev.delta
  const t = d.text ?? d.partial_json ?? d.thinking
  return typeof t === 'string' ? t : undefined
}

/**
 * A web search's result block (`content_block_start` of a `web_search_tool_result`) that holds
 * results: a search billed ($10 per 1,000), whose count only the final `message_delta` would give.
 * One holding an error (`web_search_tool_result_error`, an object) is not billed.
 */
function isSearchResult(ev: Record<string, any>): boolean {
  return ev.type === 'content_block_start' && isObject(ev.content_block) && ev.content_block.type === 'web_search_tool_result' && Array.isArray(ev.content_block.content)
}

/** The fields of a Messages answer whose text is its output: text blocks' `text`, thinking blocks' `thinking`. */
const CUT_TEXT_KEYS: ReadonlySet<string> = new Set(['text', 'thinking'])
/** A cut answer's `tool_use` blocks' `input`: output, as a stream's `input_json_delta` pieces are. */
const CUT_SHAPE: CutJsonShape = { objects: new Set(['input']) }

/** Meters the Messages API: JSON, or SSE `message_start` then `message_delta` (whose fields override). */
export class AnthropicMeter implements Meter {
  private raw: RawUsage | null = null
  private iterations: RawUsage | null = null
  private model: string | undefined
  private id: string | undefined
  private text = new OutputText()
  private complete = false
  /** The stream's `error` event's type, when it sent one. */
  private error: string | undefined
  /** The usage is final: a `message_delta` gave it (its `output_tokens` is the whole output), or a whole JSON body. */
  private final = false
  /**
   * Between `message_start` (whose `output_tokens` is only the first token or so) and the final
   * `message_delta`, the output count is unknown. Should the stream be cut in between, the output
   * is estimated from what was streamed; so the events of that stretch are kept as they came,
   * unparsed (references, no copies, at most MAX_PENDING_CHARS; beyond it only their size is
   * counted), and parsed only then. A stream that ends normally parses none of them.
   */
  private pending: string[] = []
  private pendingChars = 0
  private droppedChars = 0
  /** Web searches whose results streamed (`isSearchResult`), for a stream cut before the final count. */
  private searches = 0
  /** A usage object of the answer said which speed served it (its `speed`). */
  private speedSaid = false

  /**
   * `askedFast`: the request asked for fast mode (`speed: "fast"`, `CallShape.fast`). An answer
   * that ends before any usage (a stream cut before `message_start`, a body cut before its end)
   * never said which speed served it; its estimate is taken at the speed asked for, as the
   * answer's `usage.speed` would have said (a request fast mode could not serve is billed at
   * the standard rate, but then its answer says so). So is one cut after `message_start` whose
   * usage said no speed: its output is estimated, and its speed taken as asked.
   */
  constructor(private readonly askedFast = false) {}

  /** Whether a usage object of the answer said which speed served it (its `speed`, fast or standard). */
  get saidSpeed(): boolean {
    return this.speedSaid
  }

  event(name: string, data: string): void {
    // Once `message_start` gave the usage, only `message_*` and `error` events change the result:
    // text deltas (most of a stream's events) only estimate a stream cut before the final usage,
    // and block starts, stops and pings never did anything. Such an event is not parsed.
    if (this.raw && name !== 'error' && !mayBeMessageEvent(data)) {
      if (!this.final) this.keep(data)
      return
    }
    const ev = parseObject(data)
    if (!ev) return
    if (ev.type === 'message_stop') {
      this.complete = true
    } else if (ev.type === 'error') {
      // The stream's own error (`overloaded_error`, `api_error`): what a call that is not streamed
      // gets as an HTTP 529 or 500. Before `message_start` nothing was billed, so the call costs
      // nothing rather than an estimate. After it, the prompt counts stand and the output is
      // estimated from what streamed, as for a stream cut there.
      this.error = isObject(ev.error) && typeof ev.error.type === 'string' ? ev.error.type : 'error'
      this.complete = true
      if (!this.raw) {
        this.raw = rawUsage({})
        this.final = true
      }
    } else if (ev.type === 'message_start' && isObject(ev.message)) {
      if (typeof ev.message.model === 'string') this.model = ev.message.model
      if (typeof ev.message.id === 'string') this.id = ev.message.id
      if (isObject(ev.message.usage)) {
        this.raw = rawUsage(ev.message.usage)
        if ('speed' in ev.message.usage) this.speedSaid = true
      }
    } else if (ev.type === 'message_delta' && isObject(ev.usage)) {
      this.raw = rawUsage(ev.usage, this.raw ?? undefined)
      if ('speed' in ev.usage) this.speedSaid = true
      const it = iterationsSum(ev.usage.iterations)
      if (it) this.iterations = it
      this.final = true
      this.pending = []
    } else if (!this.final) this.streamed(ev)
  }

  /** An event before the final usage: its text, for the output's estimate, or a search it billed. */
  private streamed(ev: Record<string, any>): void {
    const t = deltaText(ev)
    if (t !== undefined) this.text.push(t)
    else if (isSearchResult(ev)) this.searches++
  }

  private keep(data: string): void {
    if (this.pendingChars + data.length > MAX_PENDING_CHARS && this.pending.length > 0) {
      this.droppedChars += data.length
      return
    }
    this.pending.push(data)
    this.pendingChars += data.length
  }

  json(body: unknown): void {
    if (!isObject(body)) return
    if (typeof body.model === 'string') this.model = body.model
    this.complete = true
    if (typeof body.id === 'string') this.id = body.id
    if (isObject(body.usage)) {
      this.raw = rawUsage(body.usage)
      if ('speed' in body.usage) this.speedSaid = true
      this.iterations = iterationsSum(body.usage.iterations)
      this.final = true
    }
  }

  /**
   * A JSON answer cut mid-body: its model and id, and the text of its content blocks and thinking,
   * and its tool calls' input (as JSON text), that arrived, for the estimate. A usage object that arrived whole (Anthropic sends it last)
   * is the bill; one without an output count keeps its prompt counts and the output is estimated.
   * Returns that usage (a wrapper's own fields in it, OpenRouter's `cost`, are read from it).
   */
  jsonCut(body: string): Record<string, unknown> | undefined {
    const cut = readCutJson(body, CUT_TEXT_KEYS, CUT_SHAPE)
    if (cut.fields.model) this.model = cut.fields.model
    if (cut.fields.id) this.id = cut.fields.id
    this.text = cut.text
    if (!cut.usage) return undefined
    this.raw = rawUsage(cut.usage)
    if ('speed' in cut.usage) this.speedSaid = true
    this.iterations = iterationsSum(cut.usage.iterations)
    this.final = cut.usage.output_tokens != null
    return cut.usage
  }

  result(): MeterResult {
    if (!this.raw) {
      const billedSoFar = this.askedFast ? { fast: true } : undefined
      return { usage: null, model: this.model, responseId: this.id, outputText: this.text.join(''), outputScale: this.text.scale, complete: this.complete, billedSoFar }
    }
    const usage = normalise(this.iterations ? withTopLevel(this.iterations, this.raw) : this.raw)
    if (this.final) return { usage, model: this.model, responseId: this.id, complete: this.complete, error: this.error }
    // Cut after message_start: the input side is exact, the output is estimated from what streamed.
    for (const data of this.pending) {
      const ev = parseObject(data)
      if (ev) this.streamed(ev)
    }
    this.pending = []
    // Two shares may be kept: of the events (by size), then of their text (OutputText's bound).
    const eventScale = this.droppedChars > 0 ? (this.pendingChars + this.droppedChars) / this.pendingChars : 1
    const scale = eventScale * (this.text.scale ?? 1)
    const outputScale = scale > 1 ? scale : undefined
    // A message_start that counted no prompt (Z.ai's says 0 and counts it only in its last
    // message_delta; Anthropic's never does) gave no usage: the whole call is estimated.
    const searches = Math.max(usage.web_searches, this.searches)
    if (usage.input_tokens === 0) {
      const fast = this.askedFast && !this.speedSaid
      const billed = searches > 0 || fast ? { ...(searches > 0 && { web_searches: searches }), ...(fast && { fast: true }) } : undefined
      return { usage: null, model: this.model, responseId: this.id, complete: this.complete, outputText: this.text.join(''), outputScale, error: this.error, billedSoFar: billed }
    }
    usage.web_searches = searches
    if (this.askedFast && !this.speedSaid) usage.fast = true
    return { usage, model: this.model, responseId: this.id, complete: this.complete, outputText: this.text.join(''), partialOutput: true, outputScale, error: this.error }
  }
}
