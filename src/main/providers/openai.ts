import { OutputText } from '../metering/output-text'
import { count, emptyUsage, isObject, type Usage } from '../metering/usage'
import { OpenAIBatchMeter } from './openai-batch'
import type { CallShape, Meter, MeterResult, Provider, RequestInfo } from './types'

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
  // `input_token_details` (singular) is the audio transcriptions' spelling.
  const inDetails = u.prompt_tokens_details ?? u.input_tokens_details ?? u.input_token_details
  const outDetails = u.completion_tokens_details ?? u.output_tokens_details
  usage.input_tokens = count(u.prompt_tokens ?? u.input_tokens)
  usage.output_tokens = count(u.completion_tokens ?? u.output_tokens)
  const extra: Record<string, number> = {}
  if (isObject(inDetails)) {
    usage.cache_read_tokens = count(inDetails.cached_tokens)
    // OpenRouter reports prompt-cache writes (Anthropic and Gemini models behind it) here.
    usage.cache_write_tokens = Math.min(count(inDetails.cache_write_tokens), usage.input_tokens)
    // gpt-image-1 (images API) and gpt-4o audio models price these parts at their own rates.
    addPart(extra, 'input_image_tokens', inDetails.image_tokens, usage.input_tokens)
    addPart(extra, 'input_audio_tokens', inDetails.audio_tokens, usage.input_tokens)
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

function addPart(extra: Record<string, number>, key: string, v: unknown, whole: number): void {
  const n = count(v)
  if (n > 0 && n <= whole) extra[key] = n
}

/**
 * Image generation and edits (`/images/*`): everything the model outputs is image tokens; the
 * response's usage has no output breakdown for gpt-image-1, so all of `output_tokens` is priced
 * at the image-output rate (which for gpt-image-1 is its only output rate).
 */
function imageUsage(raw: unknown): Usage | null {
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
 * @pydantic/genai-prices as `web_searches` and `storage_searches`.
 */
export function addToolCalls(usage: Usage, output: unknown): void {
  if (!Array.isArray(output)) return
  let web = 0
  let file = 0
  for (const item of output) {
    if (!isObject(item)) continue
    if (item.type === 'web_search_call') {
      const action = item.action
      if (!isObject(action) || action.type === undefined || action.type === 'search') web++
    } else if (item.type === 'file_search_call') {
      file++
    }
  }
  usage.web_searches = web
  usage.storage_searches = file
}

/** Reads a provider's usage object; OpenAI's reading unless a provider needs its own. */
export type UsageReader = (raw: unknown) => Usage | null

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
}

function openaiEndpoint(path: string): string {
  const p = path.endsWith('/') ? path.replace(/\/+$/, '') : path
  if (p === '/chat/completions') return 'chat.completions'
  if (p === '/responses') return 'responses'
  if (p === '/completions') return 'completions'
  // Mistral's fill-in-the-middle (Codestral), answered with OpenAI's usage.
  if (p === '/fim/completions') return 'fim.completions'
  if (p === '/embeddings') return 'embeddings'
  if (p.startsWith('/images/')) return 'images'
  if (p.startsWith('/audio/')) return 'audio'
  return 'other'
}

/** `/batches`, `/batches/{id}`, `/batches/{id}/cancel`: the Batch API's batches. */
const BATCHES = /^\/batches(?:\/([^/]+?)(\/cancel)?)?\/*$/

/**
 * Reads and cancels of what is already billed or adds no spend: never refused by a budget rule,
 * never counted (a key over its limit can still follow its batch and fetch its results).
 */
const FREE_READS = new Set(['files.content', 'batches.list', 'batches.retrieve', 'batches.cancel'])

/** `GET /files/{id}/content`: a file's bytes, a Batch API's results among them (./openai-batch.ts). */
const FILE_CONTENT = /^\/files\/([^/]+)\/content\/*$/

/** The file id of a `/files/{id}/content` path (below the version), or ''. */
export function fileIdOf(path: string): string {
  const id = FILE_CONTENT.exec(path)?.[1]
  if (!id) return ''
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}

/**
 * `POST /responses/compact`: Codex's remote compaction of a long thread (codex-api
 * endpoint/compact.rs), a model call billed like any response, its usage in its JSON answer.
 */
const COMPACT = /^\/responses\/compact\/*$/

/** `GET /responses/{id}` (retrieve, or `?stream=true`) and `POST /responses/{id}/cancel`: a stored (background) response read again. */
const RESPONSE_READ = /^\/responses\/([^/]+?)(\/cancel)?\/*$/

/**
 * The endpoint of a request by method and path (below the version, e.g. `/chat/completions`):
 * what is created by a POST (a compaction: `responses.compact`), and the Responses API's reads of a stored response
 * (`responses.retrieve`, `responses.cancel`), which are not billed themselves (they carry a
 * background response's final usage: see `OpenAIMeter`).
 */
export function openaiEndpointOf(method: string, path: string): string {
  if (method === 'GET' && path.startsWith('/files/') && FILE_CONTENT.test(path)) return 'files.content'
  if (path.startsWith('/batches')) {
    const b = BATCHES.exec(path)
    if (b) {
      if (!b[1]) return method === 'POST' ? 'batches.create' : method === 'GET' ? 'batches.list' : 'other'
      if (b[2]) return method === 'POST' ? 'batches.cancel' : 'other'
      return method === 'GET' ? 'batches.retrieve' : 'other'
    }
  }
  // Before the reads: `compact` would read as a response id.
  if (method === 'POST' && COMPACT.test(path)) return 'responses.compact'
  const read = path.startsWith('/responses/') ? RESPONSE_READ.exec(path) : null
  if (read) {
    if (method === 'GET' && !read[2]) return 'responses.retrieve'
    if (method === 'POST' && read[2]) return 'responses.cancel'
    return 'other'
  }
  return method === 'POST' ? openaiEndpoint(path) : 'other'
}

const BILLABLE = new Set(['chat.completions', 'responses', 'responses.compact', 'completions', 'fim.completions', 'embeddings', 'images', 'audio'])
/** A stored response read again (retrieve, cancel): never this request's cost (CallShape.free). */
export const READS = new Set(['responses.retrieve', 'responses.cancel'])

/**
 * What an endpoint of OpenAI's API is, for OpenAI and every API that speaks it (Azure OpenAI, the
 * OpenAI-compatible providers): billed by tokens, free for budget rules (reads of what is already
 * billed), or a file read line by line for the Batch API requests it ran.
 */
export function openaiEndpointShape(endpoint: string): Pick<CallShape, 'billable' | 'free' | 'lines'> {
  return {
    billable: BILLABLE.has(endpoint),
    free: READS.has(endpoint) || FREE_READS.has(endpoint) || undefined,
    lines: endpoint === 'files.content' || undefined,
  }
}

export function inspectOpenAI(req: RequestInfo): CallShape {
  const endpoint = openaiEndpointOf(req.method, req.path)
  const body = isObject(req.body) ? req.body : undefined
  const stream = body?.stream === true
  return {
    endpoint,
    model: typeof body?.model === 'string' ? body.model : '',
    stream,
    ...openaiEndpointShape(endpoint),
    mayLackUsage: stream && endpoint !== 'responses' && body?.stream_options?.include_usage !== true,
  }
}

/** OpenAI's and Azure OpenAI's Fast mode (Priority processing until July 2026), asked for by the request: `CallShape.fast`. */
export function withFastTier(shape: CallShape, body: unknown): CallShape {
  if (isObject(body) && (body.service_tier === 'priority' || body.service_tier === 'fast')) shape.fast = true
  return shape
}

/**
 * A failed response bills nothing, so its `usage: null` means zero. A completed one without
 * usage (an OpenAI-compatible server that sends none) is estimated instead.
 */
const NOTHING_BILLED = new Set(['response.failed'])
/** The Responses API's terminal events: nothing follows them. */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed'])
/** A response's terminal statuses (`status` of the Response object). */
const DONE = new Set(['completed', 'incomplete', 'failed', 'cancelled'])

/** The Responses API's events that stream text: the only ones an estimate reads (the others' deltas are not used). */
const TEXT_DELTAS = new Set(['response.output_text.delta', 'response.function_call_arguments.delta'])
/** Characters of unparsed deltas and chunks a stream keeps before it reads them into its text (see `OpenAIMeter.deltas`). */
const MAX_PENDING_DELTA_CHARS = 1_000_000
/** The endpoints whose streams are Chat Completions chunks (`OpenAIMeter.deferrable`). */
const CHUNKED = new Set(['chat.completions', 'completions', 'fim.completions'])

/**
 * Whether a chunk's text may hold a usage object: it names `"usage"` other than as `"usage":null`
 * (which OpenAI puts in every chunk of a stream that asked for usage). A `"usage"` inside a JSON
 * string is escaped (`\"usage\"`) and so never matches; a key spelled with `\u` escapes could
 * be `usage` without reading so, so any `\u` in the text says true; when unsure, true (the chunk
 * is parsed).
 */
export function mayCarryUsage(data: string): boolean {
  if (data.includes('\\u')) return true
  let i = data.indexOf('"usage"')
  while (i >= 0) {
    let j = skipSpace(data, i + 7)
    if (data.charCodeAt(j) !== 58 /* : */) return true
    j = skipSpace(data, j + 1)
    if (!data.startsWith('null', j)) return true
    i = data.indexOf('"usage"', j + 4)
  }
  return false
}

function skipSpace(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i)
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) break
    i++
  }
  return i
}

/** Meters Chat Completions, Completions, Responses and Embeddings, JSON or SSE. */
export class OpenAIMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private id: string | undefined
  private text = new OutputText()
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
  /** A choice gave its `finish_reason`: the generation ended. */
  private finished = false
  private readonly openaiTiers: boolean
  /** The answer says it ran in the Flex tier (`service_tier: "flex"`, the tier that served it). */
  private flex = false
  /** The answer says Fast mode (Priority processing) served it. */
  private fast = false
  /**
   * A Responses stream's text deltas (most of its events), or a Chat Completions stream's chunks
   * without usage (see `deferrable`), kept as they came, unparsed: their text is only read to
   * estimate a stream that ends without its usage. So a stream that ends normally parses none of
   * them. Past MAX_PENDING_DELTA_CHARS they are read into the text (bounded there) and let go:
   * memory stays flat, and the text exact.
   */
  private deltas: string[] = []
  private deltaChars = 0
  /** Meters a stream of Chat Completions (or legacy Completions) chunks, most of which need not be parsed (see `deferrable`). */
  private readonly chunks: boolean

  constructor(opts: OpenAIMeterOptions = {}) {
    this.read = opts.usage ?? (opts.endpoint === 'images' ? imageUsage : openaiUsage)
    this.reread = READS.has(opts.endpoint ?? '')
    this.openaiTiers = opts.openaiTiers === true
    this.chunks = opts.endpoint !== undefined && CHUNKED.has(opts.endpoint)
  }

  /** Notes the tier an answer (or a stream's chunk or Response) says served it. */
  private noteTier(tier: unknown): void {
    if (this.openaiTiers && typeof tier === 'string') {
      this.flex = tier === 'flex'
      // Fast mode, named Priority processing until July 2026: it costs more, by model.
      this.fast = tier === 'priority' || tier === 'fast'
    }
  }

  /** The usage as billed: at Batch API rates when the Flex tier served it; at fast prices when Fast mode did. */
  private billed(u: Usage | null): Usage | null {
    if (u && this.flex) u.batch = true
    if (u && this.fast) u.fast = true
    return u
  }

  /** A Response object read again: is it a background response that has finished? */
  private noteStatus(r: Record<string, any>, terminalEvent: boolean): void {
    if (this.reread && r.background === true && (terminalEvent || DONE.has(r.status))) this.backgroundDone = true
  }

  event(name: string, data: string): void {
    // Most of a Responses stream's events, by their name (the SSE event's, or a WebSocket frame's
    // type), carry neither the Response object nor a usage: output items and parts, their deltas.
    // Nothing in them changes the result but the text deltas' text, kept unparsed (see `deltas`);
    // the rest are not parsed at all. One that names a response or a usage is read as any event.
    // (A `\u` escape could spell either key: such an event is read as any event.)
    if (name.startsWith('response.') && !TERMINAL.has(name) && !data.includes('"response"') && !data.includes('"usage"') && !data.includes('\\u')) {
      if (!TEXT_DELTAS.has(name) || this.reread || this.usage) return
      this.keep(data)
      return
    }
    if (data === '[DONE]') {
      this.complete = true
      return
    }
    if (this.deferrable(name, data)) {
      this.keep(data)
      return
    }
    let ev: any
    try {
      ev = JSON.parse(data)
    } catch {
      return
    }
    if (!isObject(ev)) return
    const type = typeof ev.type === 'string' ? ev.type : name
    // A failure inside a 200 stream (a quota, a usage limit, a context too long): the call is
    // recorded with it, as an error status is, not as a success that cost nothing.
    if (type === 'error') this.failure ??= errorCode(ev.error) ?? errorCode(ev)
    if (type.startsWith('response.')) {
      if (TERMINAL.has(type)) this.complete = true
      // Responses API: usage only arrives in the terminal event.
      const r = ev.response
      if (type === 'response.failed' && isObject(r)) this.failure ??= errorCode(r.error) ?? 'response_failed'
      if (isObject(r)) {
        if (r.service_tier !== undefined) this.noteTier(r.service_tier)
        if (typeof r.model === 'string' && r.model) this.model = r.model
        if (typeof r.id === 'string' && r.id) this.id = r.id
        if (TERMINAL.has(type)) this.noteStatus(r, true)
        if (r.usage) {
          this.usage = this.read(r.usage) ?? this.usage
          if (this.usage && TERMINAL.has(type)) addToolCalls(this.usage, r.output)
        } else if (NOTHING_BILLED.has(type)) this.usage ??= emptyUsage()
        if (this.usage) this.dropDeltas()
      }
      // (Text is kept only to estimate this call's usage: a stored response read again has none.)
      if (this.reread || this.usage || typeof ev.delta !== 'string') return
      if (TEXT_DELTAS.has(type)) {
        // A delta without its event's name (a server that sends none): in order after those kept.
        this.readDeltas()
        this.text.push(ev.delta)
      }
      return
    }
    // Chat Completions (and legacy Completions) chunks.
    if (ev.service_tier !== undefined) this.noteTier(ev.service_tier)
    if (typeof ev.model === 'string' && ev.model) this.model = ev.model
    if (typeof ev.id === 'string' && ev.id) this.id = ev.id
    if (ev.usage) {
      this.usage = this.read(ev.usage) ?? this.usage
      if (this.usage) {
        this.running = Array.isArray(ev.choices) && ev.choices.length > 0
        // A running count keeps the text for a cut stream's estimate; a final one needs none of it.
        if (this.running) this.readDeltas()
        else this.dropDeltas()
      }
    }
    // Groq puts a stream's usage in the last chunk's `x_groq` object.
    else if (isObject(ev.x_groq) && ev.x_groq.usage) {
      this.usage = this.read(ev.x_groq.usage) ?? this.usage
      if (this.usage) this.dropDeltas()
    }
    if ((!this.usage || (this.running && !this.finished)) && Array.isArray(ev.choices)) this.chunkText(ev.choices)
  }

  /**
   * A Chat Completions chunk that can be left unparsed: once the stream's first chunks have named
   * its id and model (and tier), a chunk without a usage object carries only text, whose one use
   * is to estimate a stream that ends without usage. It is kept as it came (see `deltas`), so a
   * stream whose last chunk brings the usage (`stream_options.include_usage`) parses its first
   * and last chunks only.
   */
  private deferrable(name: string, data: string): boolean {
    return this.chunks && !this.usage && this.id !== undefined && this.model !== undefined && !name.startsWith('response.') && !mayCarryUsage(data)
  }

  /** A chunk's choices' text (content, refusal, tool calls' names and arguments; legacy Completions' text), for the estimate. */
  private chunkText(choices: unknown[]): void {
    for (const c of choices as any[]) {
      if (typeof c?.finish_reason === 'string') this.finished = true
      const d = c?.delta
      if (isObject(d)) {
        if (typeof d.content === 'string') this.text.push(d.content)
        if (typeof d.refusal === 'string') this.text.push(d.refusal)
        if (Array.isArray(d.tool_calls)) {
          for (const tc of d.tool_calls) {
            const fn = tc?.function
            if (typeof fn?.name === 'string') this.text.push(fn.name)
            if (typeof fn?.arguments === 'string') this.text.push(fn.arguments)
          }
        }
      } else if (typeof c?.text === 'string') {
        this.text.push(c.text)
      }
    }
  }

  /** Keeps an event's data unparsed (see `deltas`), reading what is kept into the text past MAX_PENDING_DELTA_CHARS. */
  private keep(data: string): void {
    this.deltas.push(data)
    this.deltaChars += data.length
    if (this.deltaChars > MAX_PENDING_DELTA_CHARS) this.readDeltas()
  }

  /** Reads the kept text deltas and chunks into the text, in the order they came, and lets them go. */
  private readDeltas(): void {
    const kept = this.deltas
    this.dropDeltas()
    for (const data of kept) {
      let ev: unknown
      try {
        ev = JSON.parse(data)
      } catch {
        continue
      }
      if (!isObject(ev)) continue
      if (TEXT_DELTAS.has(ev.type as string)) {
        if (typeof ev.delta === 'string') this.text.push(ev.delta)
      } else if (Array.isArray(ev.choices)) this.chunkText(ev.choices)
    }
  }

  private dropDeltas(): void {
    if (this.deltas.length === 0) return
    this.deltas = []
    this.deltaChars = 0
  }

  json(body: unknown): void {
    if (!isObject(body)) return
    this.noteTier(body.service_tier)
    if (typeof body.model === 'string' && body.model) this.model = body.model
    if (typeof body.id === 'string' && body.id) this.id = body.id
    this.usage = this.read(body.usage)
    if (this.usage && body.object === 'response') addToolCalls(this.usage, body.output)
    if (body.object === 'response') {
      this.noteStatus(body, false)
      // A failed response bills nothing (as its terminal event); a cancelled one without usage is not known: see the recorder.
      if (body.status === 'failed') this.failure ??= errorCode(body.error) ?? 'response_failed'
      if (!this.usage && body.status === 'failed') this.usage = emptyUsage()
    }
    this.complete = true
  }

  result(): MeterResult {
    if (!this.usage) this.readDeltas()
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
    // output is estimated from what streamed (never below the count so far), and marked so.
    if (this.usage && this.running && !this.finished && !this.complete) {
      return { usage: this.billed(this.usage), model: this.model, responseId: this.id, outputText: this.text.join(''), outputScale: this.text.scale, complete: false, partialOutput: true }
    }
    return {
      usage: this.billed(this.usage),
      model: this.model,
      responseId: this.id,
      outputText: this.usage ? undefined : this.text.join(''),
      outputScale: this.usage ? undefined : this.text.scale,
      complete: this.complete,
      error: this.failure ?? undefined,
    }
  }
}

/** The code (else the type) of an OpenAI error object, bounded: it is recorded as the call's `error`. */
function errorCode(e: unknown): string | null {
  if (!isObject(e)) return null
  const v = typeof e.code === 'string' && e.code ? e.code : typeof e.type === 'string' && e.type ? e.type : null
  return v === null ? null : v.slice(0, 100)
}

export const openai: Provider = {
  name: 'openai',
  pricingId: 'openai',
  defaultBaseUrl: 'https://api.openai.com/v1',
  mount: '/openai/v1',
  inspect: (req) => withFastTier(inspectOpenAI(req), req.body),
  meter: (shape, req) =>
    shape.lines ? new OpenAIBatchMeter('openai', fileIdOf(req.path)) : new OpenAIMeter({ endpoint: shape.endpoint, openaiTiers: true }),
}
