import type { IncomingHttpHeaders } from 'node:http'
import { OutputText } from '../metering/output-text'
import { type CutJsonShape, readCutJson } from '../metering/cut-json'
import { type BilledSoFar, count, emptyUsage, isObject, type Usage } from '../metering/usage'
import { GeminiBatchFileMeter, GeminiBatchMeter, downloadFileId, geminiBatchShape } from './gemini-batch'
import { SearchGrounding, requestsGoogleSearch } from './gemini-grounding'
import { InteractionsMeter, interactionsShape, isInteractions } from './gemini-interactions'
import { isLivePath } from './gemini-live-path'
import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import { openaiUsage } from './openai-usage'
import type { CallShape, Meter, MeterResult, Provider, RequestInfo } from './types'

/**
 * Google Gemini API (generativelanguage.googleapis.com). Clients send
 * `/v1beta/models/<model>:generateContent` or `:streamGenerateContent` (with `?alt=sse` an SSE
 * stream, without it one JSON array of the same response objects).
 */

/** `/v1beta/models/gemini-2.5-flash:generateContent` -> ['gemini-2.5-flash', 'generateContent'] */
function modelAndMethod(path: string): { model: string; method: string } {
  const m = /^\/v1(?:alpha|beta)?\d*\/(?:models|tunedModels)\/([^/:]+):([A-Za-z]+)$/.exec(path)
  if (!m) return { model: '', method: '' }
  let model = m[1]
  try {
    model = decodeURIComponent(model)
  } catch {
    // keep as sent
  }
  return { model, method: m[2] }
}

/**
 * Billed methods. The embedding methods return no usage, so their tokens are estimated from
 * the request's text (marked `estimated`).
 */
const BILLED = new Set(['generateContent', 'streamGenerateContent', 'embedContent', 'batchEmbedContents'])

/** Gemini's OpenAI-compatible API: `/v1beta/openai/chat/completions`, `/v1beta/openai/embeddings`. */
const OPENAI_COMPAT = /^\/v1(?:alpha|beta)?\/openai(\/.*)$/

export function inspectGemini(req: RequestInfo): CallShape {
  const compat = OPENAI_COMPAT.exec(req.path)
  if (compat) {
    const shape = inspectOpenAI({ ...req, path: compat[1] })
    // The compatible API takes `models/gemini-2.5-flash` as well as the bare name.
    return { ...shape, model: shape.model.replace(/^models\//, '') }
  }
  // The Live API's socket: each turn on it is a call (../proxy/ws/gemini-live-calls.ts), of the
  // model its client's `setup` names (given here as the body's `model`).
  if (isLivePath(req.path)) return { endpoint: 'live', model: isObject(req.body) && typeof req.body.model === 'string' ? req.body.model : '', stream: true, billable: true }
  const batch = geminiBatchShape(req.method, req.path)
  if (batch) return { model: '', stream: false, billable: false, ...batch }
  // The Interactions API (./gemini-interactions.ts): billed as generateContent, its usage named otherwise.
  const interaction = interactionsShape(req)
  if (interaction) return interaction
  const { model, method } = modelAndMethod(req.path)
  const billable = req.method === 'POST' && BILLED.has(method)
  const shape: CallShape = {
    endpoint: method || 'other',
    model,
    stream: method === 'streamGenerateContent',
    billable,
  }
  if (billable && requestsGoogleSearch(req.body)) shape.googleSearch = true
  if (billable && asksForPriority(req.body)) shape.fast = true
  return shape
}

/**
 * Whether a request asks for the Gemini API's Priority tier: its body's `serviceTier` (the SDKs'
 * `config.serviceTier`; `service_tier` in Google's REST samples) is `priority`, or the enum's
 * `SERVICE_TIER_PRIORITY` its earlier docs gave. Budgets reserve it at the model's priority price.
 */
function asksForPriority(body: unknown): boolean {
  if (!isObject(body)) return false
  const tier = body.serviceTier ?? body.service_tier
  if (typeof tier !== 'string') return false
  const t = tier.toLowerCase()
  return t === 'priority' || t === 'service_tier_priority'
}

/** Sum of `tokenCount` for the given modalities in a `*TokensDetails` list. */
function modality(details: unknown, ...names: string[]): number {
  if (!Array.isArray(details)) return 0
  let n = 0
  for (const d of details) if (isObject(d) && names.includes(d.modality)) n += count(d.tokenCount)
  return n
}

/**
 * Gemini `usageMetadata`, normalised. `promptTokenCount` includes the cached tokens;
 * `toolUsePromptTokenCount` (tool results fed back as prompt) is billed as input but is not in
 * `promptTokenCount`; `thoughtsTokenCount` is billed at the output rate but is not in
 * `candidatesTokenCount`. The parts of a modality other than text (audio, image and documents,
 * video; prompt, cache and output) are passed on as @pydantic/genai-prices' keys, as its own
 * Google extractor reads them, so a model with its own rate for one (audio input, image or video
 * output) is priced at it; text is the rest of each count.
 */
export function geminiUsage(m: unknown): Usage | null {
  if (!isObject(m)) return null
  const u = emptyUsage()
  const thoughts = count(m.thoughtsTokenCount)
  u.input_tokens = count(m.promptTokenCount) + count(m.toolUsePromptTokenCount)
  // Part of the prompt count, never more than it (an answer saying more was recorded unpriced at $0,
  // the price library unable to split its prompt, and a team server refused it).
  u.cache_read_tokens = Math.min(count(m.cachedContentTokenCount), u.input_tokens)
  u.output_tokens = count(m.candidatesTokenCount) + thoughts
  u.reasoning_tokens = thoughts
  const extra: Record<string, number> = {}
  const prompt = (...names: string[]) => modality(m.promptTokensDetails, ...names) + modality(m.toolUsePromptTokensDetails, ...names)
  const audioIn = prompt('AUDIO')
  const imageIn = prompt('IMAGE', 'DOCUMENT')
  const videoIn = prompt('VIDEO')
  if (audioIn > 0 || imageIn > 0 || videoIn > 0) {
    if (audioIn + imageIn + videoIn <= u.input_tokens) {
      if (audioIn > 0) extra.input_audio_tokens = audioIn
      if (imageIn > 0) extra.input_image_tokens = imageIn
      if (videoIn > 0) extra.input_video_tokens = videoIn
    }
    const cached = m.cacheTokensDetails
    const audioCached = modality(cached, 'AUDIO')
    const imageCached = modality(cached, 'IMAGE', 'DOCUMENT')
    const videoCached = modality(cached, 'VIDEO')
    if (audioCached + imageCached + videoCached <= u.cache_read_tokens) {
      if (audioCached > 0 && audioCached <= audioIn) extra.cache_audio_read_tokens = audioCached
      if (imageCached > 0 && imageCached <= imageIn) extra.cache_image_read_tokens = imageCached
      if (videoCached > 0 && videoCached <= videoIn) extra.cache_video_read_tokens = videoCached
    }
  }
  const out = m.candidatesTokensDetails
  const imageOut = modality(out, 'IMAGE', 'DOCUMENT')
  const audioOut = modality(out, 'AUDIO')
  const videoOut = modality(out, 'VIDEO')
  if (imageOut + audioOut + videoOut <= u.output_tokens) {
    if (imageOut > 0) extra.output_image_tokens = imageOut
    if (audioOut > 0) extra.output_audio_tokens = audioOut
    if (videoOut > 0) extra.output_video_tokens = videoOut
  }
  if (Object.keys(extra).length > 0) u.extra = extra
  // The tier that served the call: the Gemini API's `serviceTier`, Vertex AI's `trafficType`.
  // Flex (Vertex AI's Flex PayGo) is billed at Batch API rates (half), as Google prices it;
  // priority costs more, by model: marked fast, priced by a `speed: fast` override when there is
  // one, else at Google's published Priority prices (../pricing/gemini-priority.ts).
  const tier = typeof m.serviceTier === 'string' ? m.serviceTier.toLowerCase() : ''
  if (tier === 'flex' || m.trafficType === 'ON_DEMAND_FLEX') u.batch = true
  else if (tier === 'priority' || m.trafficType === 'ON_DEMAND_PRIORITY') u.fast = true
  return u
}

/**
 * Whether a `usageMetadata` counts tokens. Vertex AI's streams put one in every event, but before
 * the last it holds only the tier (`{"trafficType": "ON_DEMAND"}`): that is no count of the call
 * (a stream cut there is estimated from its request and what it streamed, not recorded at 0).
 */
function countsTokens(m: Record<string, unknown>): boolean {
  return typeof m.promptTokenCount === 'number' || typeof m.candidatesTokenCount === 'number' || typeof m.totalTokenCount === 'number'
}

/**
 * The tier the Gemini API's `x-gemini-service-tier` answer header says served the call (Google's
 * Priority inference docs: a priority request over its limit is served at the standard tier, and
 * the header says `standard`): `flex`, `priority` or `standard`; undefined for anything else.
 * A `generateContent` answer's `usageMetadata` names no tier (the SDKs' UsageMetadata has only
 * Vertex AI's `trafficType`), so the header is what tells a Flex or Priority call from a standard one.
 */
export function servedTier(h: IncomingHttpHeaders): 'flex' | 'priority' | 'standard' | undefined {
  const raw = h['x-gemini-service-tier']
  const v = (Array.isArray(raw) ? raw[0] : raw)?.trim().toLowerCase()
  return v === 'flex' || v === 'priority' || v === 'standard' ? v : undefined
}

/** Marks `u` as billed at the tier the header named: Flex at batch rates, priority fast, standard neither. */
function atTier(u: Usage, tier: 'flex' | 'priority' | 'standard'): void {
  delete u.batch
  delete u.fast
  if (tier === 'flex') u.batch = true
  else if (tier === 'priority') u.fast = true
}

/** The tier marks of a usage (Flex billed at batch rates, priority fast), or undefined when it has neither. */
function tierOf(u: Usage | null): BilledSoFar | undefined {
  if (u?.batch) return { batch: true }
  return u?.fast ? { fast: true } : undefined
}

/** A cut `generateContent` answer's output text: its parts' text, code written and what that code printed. */
const CUT_TEXT_KEYS: ReadonlySet<string> = new Set(['text', 'code', 'output'])
/**
 * Gemini's names (`groundingMetadata`'s segments repeat the answer's text: not output again; a
 * `functionCall`, its name and args, is output as its JSON text, as a stream's is counted).
 */
const CUT_SHAPE: CutJsonShape = {
  usageKey: 'usageMetadata',
  fields: new Set(['modelVersion', 'responseId']),
  ignore: new Set(['groundingMetadata']),
  objects: new Set(['functionCall']),
}
/** Code Assist's answer, wrapped (`{response: {…}, traceId}`). */
const CUT_ENVELOPED: CutJsonShape = { ...CUT_SHAPE, depth: 2 }

/**
 * Meters `generateContent` (one JSON object), `streamGenerateContent?alt=sse` (events that each
 * repeat the cumulative usage, so the last one counts) and `streamGenerateContent` without
 * `alt=sse` (a JSON array of the same objects; the last element with usage counts).
 */
export class GeminiMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private id: string | undefined
  private text = new OutputText()
  private complete = false
  /** Grounding with Google Search the answers reported (./gemini-grounding.ts); null until one did. */
  private grounding: SearchGrounding | null = null
  /** The tier a count-less `usageMetadata` named (`countsTokens`), billed with the estimate of a stream cut before any count. */
  private tier: BilledSoFar | undefined
  /** A cut answer's `usageMetadata` arrived whole: its counts are the bill, not a running floor. */
  private billed = false
  /** The tier the answer's `x-gemini-service-tier` header named (`servedTier`): it, not `usageMetadata`, says what served the call. */
  private served: 'flex' | 'priority' | 'standard' | undefined

  /**
   * `envelope`: each answer is `{response: <Gemini answer>, traceId}`, as Gemini Code Assist
   * (the API Gemini CLI uses when logged in with Google: ./code-assist.ts) sends them.
   * `tierHeader`: the answer's `x-gemini-service-tier` header says which tier served it (the
   * Gemini API's; Vertex AI says it in `usageMetadata.trafficType`).
   */
  constructor(private readonly opts: { envelope?: boolean; tierHeader?: boolean } = {}) {}

  private take(answer: unknown): void {
    let obj = answer
    if (this.opts.envelope) {
      if (!isObject(answer)) return
      if (typeof answer.traceId === 'string' && answer.traceId && !this.id) this.id = answer.traceId
      obj = answer.response
    }
    if (!isObject(obj)) return
    if (Array.isArray(obj.candidates)) {
      for (const c of obj.candidates) {
        if (!isObject(c)) continue
        if (typeof c.finishReason === 'string' && c.finishReason) this.complete = true
        // Grounding with Google Search: its queries, counted once however often a stream repeats them.
        if (isObject(c.groundingMetadata)) (this.grounding ??= new SearchGrounding()).take(c.groundingMetadata)
      }
    }
    // A prompt blocked before any output: that answer is the last one.
    if (isObject(obj.promptFeedback) && obj.promptFeedback.blockReason) this.complete = true
    if (typeof obj.modelVersion === 'string' && obj.modelVersion) this.model = obj.modelVersion
    if (typeof obj.responseId === 'string' && obj.responseId) this.id = obj.responseId
    const counted = isObject(obj.usageMetadata) && countsTokens(obj.usageMetadata)
    if (isObject(obj.usageMetadata) && !counted) this.tier = tierOf(geminiUsage(obj.usageMetadata))
    if (counted) {
      this.usage = geminiUsage(obj.usageMetadata)
      this.text = new OutputText()
    } else if (!this.usage && Array.isArray(obj.candidates)) {
      for (const c of obj.candidates) {
        const parts = c?.content?.parts
        if (!Array.isArray(parts)) continue
        for (const p of parts) {
          if (typeof p?.text === 'string') this.text.push(p.text)
          else if (isObject(p?.functionCall)) this.text.push(JSON.stringify(p.functionCall))
          // The code execution tool: the code written and what it printed, both billed as output.
          else if (typeof p?.executableCode?.code === 'string') this.text.push(p.executableCode.code)
          else if (typeof p?.codeExecutionResult?.output === 'string') this.text.push(p.codeExecutionResult.output)
        }
      }
    }
  }

  headers(h: IncomingHttpHeaders): void {
    if (this.opts.tierHeader) this.served = servedTier(h)
  }

  event(_name: string, data: string): void {
    let ev: unknown
    try {
      ev = JSON.parse(data)
    } catch {
      return
    }
    if (Array.isArray(ev)) for (const e of ev) this.take(e)
    else this.take(ev)
  }

  json(body: unknown): void {
    if (Array.isArray(body)) for (const e of body) this.take(e)
    else this.take(body)
    this.complete = true
  }

  /** A streamed JSON array cut after `elements`: complete only if one of them was the last answer (its finishReason). */
  jsonElements(elements: unknown[]): void {
    for (const e of elements) this.take(e)
  }

  /**
   * A `generateContent` answer cut mid-body (not an array: those go to `jsonElements`): its model,
   * id and the text of its parts (and function calls, as JSON text) that arrived, for the
   * estimate. A `usageMetadata` that arrived whole with its counts is the bill (a whole answer's
   * usage is counted before it is sent).
   */
  jsonCut(body: string): void {
    const cut = readCutJson(body, CUT_TEXT_KEYS, this.opts.envelope ? CUT_ENVELOPED : CUT_SHAPE)
    if (cut.fields.modelVersion) this.model = cut.fields.modelVersion
    if (cut.fields.responseId && !this.id) this.id = cut.fields.responseId
    if (cut.usage && countsTokens(cut.usage)) {
      this.usage = geminiUsage(cut.usage)
      this.billed = true
      return
    }
    if (cut.usage) this.tier = tierOf(geminiUsage(cut.usage))
    this.text = cut.text
  }

  result(): MeterResult {
    const r: MeterResult = { usage: this.usage, model: this.model, responseId: this.id, complete: this.complete }
    if (this.usage && this.served) atTier(this.usage, this.served)
    // A cut answer's estimate is at the tier the header named, else at one a count-less usageMetadata named.
    const tier: BilledSoFar | undefined = this.served ? (this.served === 'flex' ? { batch: true } : this.served === 'priority' ? { fast: true } : undefined) : this.tier
    // The searches are billed with the call: on its usage, or with the estimate of a stream cut before any.
    const searched = this.grounding?.usage()
    if (searched && this.usage) Object.assign(this.usage, searched)
    else if (searched || tier) r.billedSoFar = { ...tier, ...searched }
    if (!this.usage) {
      r.outputText = this.text.join('')
      r.outputScale = this.text.scale
    }
    // A stream cut before its last answer (the one with a finishReason): the usage is the running
    // count of an earlier event, exact for the prompt but only a floor for the output, so the call
    // is marked estimated (its output never below that count).
    if (this.usage && !this.complete && !this.billed) {
      r.partialOutput = true
      r.outputText = ''
    }
    return r
  }
}

/**
 * Gemini's OpenAI-compatible API: OpenAI's usage, except that Gemini bills its thinking at the
 * output rate and counts it in `total_tokens` (its `totalTokenCount`) whether or not it is in
 * `completion_tokens` or reported as `completion_tokens_details.reasoning_tokens`. Whatever of
 * the total neither `prompt_tokens` nor `completion_tokens` holds is counted as thinking output
 * (with an OpenAI-style usage, where the total is their sum, nothing is added).
 */
export function geminiCompatUsage(raw: unknown): Usage | null {
  const u = openaiUsage(raw)
  if (!u || !isObject(raw)) return u
  const beyond = count(raw.total_tokens) - u.input_tokens - u.output_tokens
  if (beyond > 0) {
    u.output_tokens += beyond
    u.reasoning_tokens = Math.max(u.reasoning_tokens, beyond)
  }
  return u
}

export const gemini: Provider = {
  name: 'gemini',
  pricingId: 'google',
  defaultBaseUrl: 'https://generativelanguage.googleapis.com',
  mount: '/gemini',
  credentials: ['x-goog-api-key', 'query-key', 'authorization'],
  inspect: inspectGemini,
  meter: (shape, req) =>
    OPENAI_COMPAT.test(req.path)
      ? new OpenAIMeter({ endpoint: shape.endpoint, usage: geminiCompatUsage })
      : isInteractions(shape.endpoint)
        ? new InteractionsMeter(shape.endpoint, geminiUsage)
        : shape.endpoint === 'batches.get' || shape.endpoint === 'batches.list'
          ? new GeminiBatchMeter()
          : shape.lines
            ? new GeminiBatchFileMeter(downloadFileId(req.path))
            : new GeminiMeter({ tierHeader: true }),
}
