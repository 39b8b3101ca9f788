import { readCutJson } from '../metering/cut-json'
import type { OutputText } from '../metering/output-text'
import { type BilledSoFar, emptyUsage, isObject, parseObject, setToolImages, type Usage } from '../metering/usage'
import { noteBatches } from './openai-batch-files'
import { READS } from './openai-endpoints'
import { CHUNKED, DONE, mayCarryUsage, NOTHING_BILLED, passesOver, TERMINAL, TEXT_DELTAS } from './openai-stream-events'
import { StreamText } from './openai-stream-text'
import { IMAGE_ITEM_DONE, ImageToolCalls, PARTIAL_IMAGE } from './openai-image-tool'
import { SearchToolCalls, TOOL_ITEM } from './openai-search-calls'
import { ServiceTier } from './openai-tier'
import { addToolCalls, durationUsage, imageUsage, openaiUsage, type UsageReader } from './openai-usage'
import type { Meter, MeterResult } from './types'

/**
 * The meter of OpenAI's answers and of every provider that answers in its format: it reads an
 * answer (JSON, or a stream's events and chunks) into its usage, model, id, tier and error, and
 * assembles the call's result from them. Which events it leaves unparsed is told by
 * ./openai-stream-events.ts; the text kept to estimate a stream that ends without its usage is
 * ./openai-stream-text.ts's; a usage object is read by ./openai-usage.ts.
 */

export interface OpenAIMeterOptions {
  /** The endpoint (`CallShape.endpoint`) being metered. */
  endpoint?: string
  /** How the provider's `usage` object is read (default: `openaiUsage`). */
  usage?: UsageReader
  /**
   * The answer's `service_tier` is billed as OpenAI and Azure OpenAI bill it: `flex` at Batch API
   * rates (Flex processing: half of every token price), `priority` or `fast` (Fast mode) at the
   * model's fast price (the usage is marked `fast`). Not for other providers, whose tiers of the
   * same names are priced otherwise (Groq's flex costs as its on-demand tier).
   */
  openaiTiers?: boolean
  /**
   * With `openaiTiers`: the `service_tier` the request asked for. An explicit `priority` (`fast`)
   * or `flex` is the tier of an answer that ends without its usage and without naming a tier
   * (`MeterResult.billedSoFar`); `auto` and `default` ask for none (the project's default tier).
   */
  requestTier?: unknown
}

/** Meters Chat Completions, Completions, Responses and Embeddings, JSON or SSE. */
export class OpenAIMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private id: string | undefined
  /** The streamed text, for the estimate of a stream that ends without its usage. */
  private readonly text = new StreamText()
  private complete = false
  /** The error a 200 answer carried (an `error` event, a failed response), recorded as the call's. */
  private failure: string | null = null
  private readonly read: UsageReader
  /** A stored response read again (retrieve, cancel): its usage is the creating call's. */
  private readonly reread: boolean
  /** Read again: the answer is a background response in a terminal status. */
  private backgroundDone = false
  /**
   * Chat Completions: the usage came in a chunk that still carried choices (servers that send a
   * running count in every chunk: vLLM's continuous usage stats, some OpenAI-compatible APIs), so
   * it is final only once a choice has finished or the stream said `[DONE]`; meanwhile the text is
   * kept, to estimate the output should the stream be cut. (OpenAI's own usage chunk has no choices.)
   */
  private running = false
  /** The tier that served the answer (./openai-tier.ts), read when OpenAI's tiers are billed (`openaiTiers`). */
  private readonly tier: ServiceTier | null
  /** Meters a stream of Chat Completions (or legacy Completions) chunks, most of which need not be parsed (see `deferrable`). */
  private readonly chunks: boolean
  /** Meters an audio call (`/audio/*`): a transcription without usage may give its audio's length. */
  private readonly audio: boolean
  /** What a Responses answer's image_generation tool made (./openai-image-tool.ts); null until it made something. */
  private images: ImageToolCalls | null = null
  /** The searches a Responses stream's items ran (./openai-search-calls.ts), for a stream cut before its usage; null until one ran. */
  private searches: SearchToolCalls | null = null
  /** The tools the last Response object read echoed (its `tools`), for the image tool's settings. */
  private tools: unknown
  /** The text of a JSON answer cut mid-body (`jsonCut`), for its estimate. */
  private cutText: OutputText | null = null
  /** A Batch API answer: the batches it describes are noted (./openai-batch-files.ts). */
  private readonly batch: boolean

  constructor(opts: OpenAIMeterOptions = {}) {
    // A Batch API answer (a batch created, followed, cancelled, or its requests added) costs nothing:
    // a Batch object's `usage` totals the requests it ran, each recorded from its results (./openai-batch.ts).
    this.batch = opts.endpoint?.startsWith('batches.') === true
    this.read = this.batch ? noUsage : (opts.usage ?? (opts.endpoint === 'images' ? imageUsage : openaiUsage))
    this.reread = READS.has(opts.endpoint ?? '')
    this.tier = opts.openaiTiers === true ? new ServiceTier(opts.requestTier) : null
    this.chunks = opts.endpoint !== undefined && CHUNKED.has(opts.endpoint)
    this.audio = opts.endpoint === 'audio'
  }

  /** The usage as billed: at Batch API rates when the Flex tier served it; at fast prices when Fast mode did. */
  private billed(u: Usage | null): Usage | null {
    return u && this.tier ? this.tier.billed(u) : u
  }

  /** A Response object read again: is it a background response that has finished? */
  private noteStatus(r: Record<string, any>, terminalEvent: boolean): void {
    if (this.reread && r.background === true && (terminalEvent || DONE.has(r.status))) this.backgroundDone = true
  }

  event(name: string, data: string): void {
    // Most of a Responses stream's events carry neither the Response object nor a usage: the text
    // deltas' text is kept unparsed (see `StreamText.deltas`); the rest are not parsed at all.
    if (passesOver(name, data)) {
      // A tool call billed on its own that completed (an image the image_generation tool made: its
      // item's data holds the image, so is searched only in an item's done event; a web or file
      // search), or a partial image it streamed.
      if (name === IMAGE_ITEM_DONE ? TOOL_ITEM.test(data) : name === PARTIAL_IMAGE) {
        const ev = parseObject(data)
        if (ev) this.toolEvent(name, ev)
        return
      }
      if (!TEXT_DELTAS.has(name) || this.reread || this.usage) return
      this.text.keep(data)
      return
    }
    if (data === '[DONE]') {
      this.complete = true
      return
    }
    if (this.deferrable(name, data)) {
      this.text.keep(data)
      return
    }
    const ev = parseObject(data)
    if (!ev) return
    const type = typeof ev.type === 'string' ? ev.type : name
    // A failure inside a 200 stream (a quota, a usage limit, a context too long): the call is
    // recorded with it, as an error status is, not as a success that cost nothing.
    if (type === 'error') this.failure ??= errorCode(ev.error) ?? errorCode(ev)
    if (type.startsWith('response.')) {
      if (TERMINAL.has(type)) this.complete = true
      // Responses API: usage only arrives in the terminal event.
      const r = ev.response
      if (type === 'response.failed' && isObject(r)) this.failure ??= errorCode(r.error) ?? 'response_failed'
      if (type === IMAGE_ITEM_DONE || type === PARTIAL_IMAGE) this.toolEvent(type, ev)
      if (isObject(r)) {
        if (r.service_tier !== undefined) this.tier?.note(r.service_tier)
        if (r.tools !== undefined) this.tools = r.tools
        if (typeof r.model === 'string' && r.model) this.model = r.model
        if (typeof r.id === 'string' && r.id) this.id = r.id
        if (TERMINAL.has(type)) {
          this.noteStatus(r, true)
          this.imageItems(r.output)
          // (A terminal Response without usage: its searches are billed on top of its estimate.)
          if (!r.usage && Array.isArray(r.output)) (this.searches ??= new SearchToolCalls()).output(r.output)
        }
        if (r.usage) {
          this.usage = this.read(r.usage) ?? this.usage
          if (this.usage && TERMINAL.has(type)) addToolCalls(this.usage, r)
        } else if (NOTHING_BILLED.has(type)) this.usage ??= emptyUsage()
        if (this.usage) this.text.drop()
      }
      // (Text is kept only to estimate this call's usage: a stored response read again has none.)
      if (this.reread || this.usage || typeof ev.delta !== 'string') return
      if (TEXT_DELTAS.has(type)) {
        // A delta without its event's name (a server that sends none): in order after those kept.
        this.text.read()
        this.text.push(ev.delta)
      }
      return
    }
    // Chat Completions (and legacy Completions) chunks.
    if (ev.service_tier !== undefined) this.tier?.note(ev.service_tier)
    if (typeof ev.model === 'string' && ev.model) this.model = ev.model
    if (typeof ev.id === 'string' && ev.id) this.id = ev.id
    // Moonshot (Kimi) puts a stream's usage in its finishing choice instead (see `choiceUsage`).
    const usage = ev.usage ?? choiceUsage(ev.choices)
    if (usage) {
      this.usage = this.read(usage) ?? this.usage
      if (this.usage) {
        this.running = Array.isArray(ev.choices) && ev.choices.length > 0
        // A running count keeps the text for a cut stream's estimate; a final one needs none of it.
        if (this.running) this.text.read()
        else this.text.drop()
      }
    }
    // Groq puts a stream's usage in the last chunk's `x_groq` object.
    else if (isObject(ev.x_groq) && ev.x_groq.usage) {
      this.usage = this.read(ev.x_groq.usage) ?? this.usage
      if (this.usage) this.text.drop()
    }
    if ((!this.usage || (this.running && !this.text.finished)) && Array.isArray(ev.choices)) this.text.chunk(ev.choices)
  }

  /**
   * A Chat Completions chunk that can be left unparsed: once the stream's first chunks have named
   * its id and model (and tier), a chunk without a usage object carries only text, whose one use
   * is to estimate a stream that ends without usage. It is kept as it came (see
   * `StreamText.deltas`), so a stream whose last chunk brings the usage
   * (`stream_options.include_usage`) parses its first and last chunks only.
   */
  private deferrable(name: string, data: string): boolean {
    return this.chunks && !this.usage && this.id !== undefined && this.model !== undefined && !name.startsWith('response.') && !mayCarryUsage(data)
  }

  json(body: unknown): void {
    if (!isObject(body)) return
    if (this.batch) noteBatches(body)
    this.tier?.note(body.service_tier)
    if (typeof body.model === 'string' && body.model) this.model = body.model
    if (typeof body.id === 'string' && body.id) this.id = body.id
    this.usage = this.read(body.usage)
    if (!this.usage && this.audio) this.usage = durationUsage(body)
    if (this.usage && body.object === 'response') addToolCalls(this.usage, body)
    if (body.object === 'response') {
      this.tools = body.tools
      this.imageItems(body.output)
      this.noteStatus(body, false)
      // A failed response bills nothing (as its terminal event); a cancelled one without usage is not known: see the recorder.
      if (body.status === 'failed') this.failure ??= errorCode(body.error) ?? 'response_failed'
      if (!this.usage && body.status === 'failed') this.usage = emptyUsage()
    }
    this.complete = true
  }

  /**
   * A JSON answer cut mid-body: its model, id and tier, and the text that arrived (message content,
   * refusals, reasoning, tool calls' arguments; a Response's output text and summaries; legacy
   * Completions' text), for the estimate. A usage object that arrived whole (OpenAI sends it near
   * the end) is the bill.
   */
  jsonCut(body: string): void {
    const cut = readCutJson(body, CUT_TEXT_KEYS)
    this.tier?.note(cut.fields.service_tier)
    if (cut.fields.model) this.model = cut.fields.model
    if (cut.fields.id) this.id = cut.fields.id
    if (cut.usage) this.usage = this.read(cut.usage)
    if (!this.usage) this.cutText = cut.text
  }

  /**
   * A stream's tool event: an output item done (counted if it is a completed image, or a web or
   * file search), or a partial image.
   */
  private toolEvent(type: string, ev: Record<string, any>): void {
    if (type === PARTIAL_IMAGE) (this.images ??= new ImageToolCalls()).partial()
    else if (isObject(ev.item)) {
      const index = typeof ev.output_index === 'number' ? ev.output_index : -1
      if (ev.item.type === 'image_generation_call') (this.images ??= new ImageToolCalls()).item(ev.item, index)
      else if (ev.item.type === 'web_search_call' || ev.item.type === 'file_search_call') (this.searches ??= new SearchToolCalls()).item(ev.item, index)
    }
  }

  /** A Response's `output`: its image_generation_call items (one loop over a few items; nothing kept when it has none). */
  private imageItems(output: unknown): void {
    if (!Array.isArray(output)) return
    for (const item of output) {
      if (isObject(item) && item.type === 'image_generation_call') {
        ;(this.images ??= new ImageToolCalls()).output(output)
        return
      }
    }
  }

  result(): MeterResult {
    // What the image tool made is billed whatever else the answer reports: added to its usage here,
    // and to the estimate of one without usage by the recorder (`billedSoFar`).
    const images = this.images?.usage(this.tools) ?? undefined
    if (images && this.usage) setToolImages(this.usage, images)
    if (!this.usage) this.text.read()
    // A stored response read again is not billed itself: a finished background response's usage
    // goes to the call that created it; any other's was billed to its creating call already.
    if (this.reread) {
      return {
        usage: null,
        model: this.model,
        responseId: this.id,
        complete: this.complete,
        backgroundUsage: this.backgroundDone && this.usage ? this.billed(this.usage)! : undefined,
        backgroundEnded: this.backgroundDone || undefined,
      }
    }
    // A running count from a stream cut before its generation ended: the prompt side is exact, the
    // output is estimated from what streamed (never below the count so far), and marked so. A charge
    // the count carries (Perplexity's `usage.cost` in every chunk: $0 until its last chunk adds the
    // request fee and the output) is the charge so far, not the call's: the call is priced from its
    // tokens instead.
    if (this.usage && this.running && !this.text.finished && !this.complete) {
      delete this.usage.provider_cost_usd
      return { usage: this.billed(this.usage), model: this.model, responseId: this.id, outputText: this.text.join(), outputScale: this.text.scale, complete: false, partialOutput: true }
    }
    return {
      usage: this.billed(this.usage),
      model: this.model,
      responseId: this.id,
      outputText: this.usage ? undefined : (this.cutText?.join('') ?? this.text.join()),
      outputScale: this.usage ? undefined : (this.cutText ?? this.text).scale,
      complete: this.complete,
      error: this.failure ?? undefined,
      billedSoFar: this.usage ? undefined : this.billedSoFar(images),
    }
  }

  /**
   * What an answer without usage is billed for beyond its tokens (`MeterResult.billedSoFar`): the
   * tier it named, else the one its request explicitly asked for; its searches and images. Undefined
   * when none (most estimated calls).
   */
  private billedSoFar(images: Pick<Usage, 'tool_images' | 'guessed'> | undefined): BilledSoFar | undefined {
    const tier = this.tier?.marks()
    const searches = this.searches?.usage(this.tools)
    return images || searches || tier ? { ...images, ...searches, ...tier } : undefined
  }
}

/** The fields of an OpenAI-format answer whose text is its output (see `OpenAIMeter.jsonCut`). */
const CUT_TEXT_KEYS: ReadonlySet<string> = new Set(['content', 'refusal', 'reasoning_content', 'reasoning', 'arguments', 'text'])

/**
 * The usage a Chat Completions chunk carries inside its first choice (`choices[0].usage`), where
 * Moonshot (Kimi) puts a stream's final usage, cache hits included, on the chunk whose choice has
 * its `finish_reason`, with no top-level `usage` unless the request set
 * `stream_options.include_usage` (then it is sent again at the top level of a last chunk, and read
 * once: each usage read replaces the one before). The stream example of Moonshot's API docs ends
 * so (`"choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":19,…}}]`,
 * as northes/go-moonshot#17 quotes it), and so do captures of its API: higress-group/higress#1568
 * (moonshot-v1-8k) and AstrBotDevs/AstrBot#6614 (kimi-k2-0905-preview, with `cached_tokens`).
 * OpenAI's own chunks never carry one there.
 */
function choiceUsage(choices: unknown): unknown {
  return Array.isArray(choices) && isObject(choices[0]) ? choices[0].usage : undefined
}

/** The code (else the type) of an OpenAI error object, bounded: it is recorded as the call's `error`. */
function errorCode(e: unknown): string | null {
  if (!isObject(e)) return null
  const v = typeof e.code === 'string' && e.code ? e.code : typeof e.type === 'string' && e.type ? e.type : null
  return v === null ? null : v.slice(0, 100)
}

/** The usage reader of an answer that bills nothing itself. */
const noUsage: UsageReader = () => null
