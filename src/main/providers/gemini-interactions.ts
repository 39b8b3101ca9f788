import { OutputText } from '../metering/output-text'
import { count, isObject, parseObject, type Usage } from '../metering/usage'
import type { CallShape, Meter, MeterResult, RequestInfo } from './types'

/**
 * The Gemini API's Interactions API (ai.google.dev/api/interactions-api; googleapis/python-genai
 * `google/genai/_gaos/interactions.py` and `_gaos/types/interactions/`): `POST /v1beta/interactions`
 * with `{model | agent, input, stream?, background?}` answers an Interaction (`{id, status, model,
 * steps, usage, service_tier}`), or with `stream: true` Server-Sent Events whose data carry their
 * `event_type`: `interaction.created`, `interaction.status_update`, `step.start`, `step.delta`
 * (`delta: {type: "text", text}`; `metadata.total_usage`), `step.stop` (`usage`), and
 * `interaction.completed` (`interaction.usage`), named `interaction.start` and
 * `interaction.complete` (with `content.*` deltas) before May 2026. Its usage is billed as
 * `generateContent`'s: `total_input_tokens` (prompt, with `total_cached_tokens` in it),
 * `total_tool_use_tokens` (tool results fed back, input but not in it), `total_output_tokens` and
 * `total_thought_tokens` (thinking, billed at the output rate and, as `generateContent`'s
 * `thoughtsTokenCount`, not in the output count: Google's samples give `total_tokens` as their sum),
 * broken down by modality (`input_tokens_by_modality: [{modality: "text", tokens}]`).
 *
 * `background: true` answers at once (`status: "in_progress"`, no usage); the interaction is
 * polled with `GET /v1beta/interactions/{id}` (or read as a stream, `?stream=true`) until it ends,
 * and only that answer's usage says what it used: the POST is recorded estimated and takes it once,
 * as a background response does (../pricing/background.ts); the reads, the cancel and the delete
 * are free (never billed, never counted or refused by a budget rule).
 */

const PATH = /^\/v1(?:alpha|beta)?\d*\/interactions(?:\/([^/]+?)(\/cancel)?)?\/*$/

export const INTERACTIONS = 'interactions'
const READ = 'interactions.get'
const CANCEL = 'interactions.cancel'
const DELETE = 'interactions.delete'

/**
 * The model an interaction run by an agent (`{agent, input}`, no `model`) is reserved as by budgets
 * (`CallShape.reserveAs`): the agent's id is no model of the price data and its answer names none.
 * Google runs its Deep Research agents (`deep-research-pro-preview-12-2025`,
 * `deep-research-preview-04-2026`, `deep-research-max-preview-04-2026`) on Gemini 3 Pro and 3.1 Pro
 * and bills them "at standard Gemini list rates"; an agent whose model is not published (Antigravity)
 * is reserved so too: Gemini 3.1 Pro is the dearest Gemini text model of the price data, so a rule
 * holds too much for it rather than nothing.
 */
export const AGENT_RESERVE_MODEL = 'gemini-3.1-pro-preview'

/** Statuses an interaction ends in (`requires_action`: its turn ended on a function call the client runs). */
const ENDED = new Set(['completed', 'failed', 'cancelled', 'incomplete', 'budget_exceeded', 'requires_action'])

/** The shape of an Interactions API request, or null when the request is not one. */
export function interactionsShape(req: RequestInfo): CallShape | null {
  if (!req.path.includes('/interactions')) return null
  const m = PATH.exec(req.path)
  if (!m) return null
  const body = isObject(req.body) ? req.body : undefined
  if (!m[1]) {
    if (req.method !== 'POST') return null
    const model = typeof body?.model === 'string' ? body.model : typeof body?.agent === 'string' ? body.agent : ''
    const shape: CallShape = { endpoint: INTERACTIONS, model: model.replace(/^models\//, ''), stream: body?.stream === true, billable: true }
    if (typeof body?.model !== 'string' && typeof body?.agent === 'string') shape.reserveAs = AGENT_RESERVE_MODEL
    if (typeof body?.service_tier === 'string' && body.service_tier.toLowerCase() === 'priority') shape.fast = true
    if (requestsSearch(body)) shape.googleSearch = true
    return shape
  }
  const free = (endpoint: string): CallShape => ({ endpoint, model: '', stream: /(?:^|&)stream=true(?:&|$)/.test(req.query), billable: false, free: true })
  if (m[2]) return req.method === 'POST' ? free(CANCEL) : null
  if (req.method === 'GET') return free(READ)
  if (req.method === 'DELETE') return free(DELETE)
  return null
}

export const isInteractions = (endpoint: string): boolean => endpoint === INTERACTIONS || endpoint === READ || endpoint === CANCEL

/** `[{modality: "text", tokens}]` as `generateContent`'s `[{modality: "TEXT", tokenCount}]`. */
function details(list: unknown): unknown {
  if (!Array.isArray(list)) return undefined
  return list.map((d) => (isObject(d) ? { modality: typeof d.modality === 'string' ? d.modality.toUpperCase() : d.modality, tokenCount: d.tokens } : d))
}

/** Whether an Interactions `usage` counts tokens (not an empty object). */
function countsTokens(u: Record<string, unknown>): boolean {
  return ['total_input_tokens', 'total_output_tokens', 'total_thought_tokens', 'total_tool_use_tokens', 'total_tokens'].some((k) => typeof u[k] === 'number')
}

/**
 * An Interactions `usage` read as Gemini's `usageMetadata` is (`geminiUsage`: the same counts under
 * other names), with the tier that served it (`service_tier`: `flex` at batch rates, `priority` fast).
 */
export function interactionsUsage(u: unknown, serviceTier: unknown, read: (m: unknown) => Usage | null): Usage | null {
  if (!isObject(u) || !countsTokens(u)) return null
  const usage = read({
    promptTokenCount: u.total_input_tokens,
    cachedContentTokenCount: u.total_cached_tokens,
    candidatesTokenCount: u.total_output_tokens,
    thoughtsTokenCount: u.total_thought_tokens,
    toolUsePromptTokenCount: u.total_tool_use_tokens,
    totalTokenCount: u.total_tokens,
    promptTokensDetails: details(u.input_tokens_by_modality),
    cacheTokensDetails: details(u.cached_tokens_by_modality),
    candidatesTokensDetails: details(u.output_tokens_by_modality),
    toolUsePromptTokensDetails: details(u.tool_use_tokens_by_modality),
    serviceTier: typeof serviceTier === 'string' ? serviceTier : undefined,
  })
  // Grounding with Google Search: `grounding_tool_count: [{type: "google_search", count}]`, read as the
  // queries it ran (../pricing/search-grounding.ts prices them; what a count counts is not documented
  // further, and queries are the dearer reading).
  if (usage && Array.isArray(u.grounding_tool_count)) {
    let searches = 0
    for (const g of u.grounding_tool_count) if (isObject(g) && g.type === 'google_search') searches += count(g.count)
    if (searches > 0) {
      usage.google_search_queries = searches
      usage.google_search_grounded = true
    }
  }
  return usage
}

/** Whether an interaction's request names the Google Search tool (`tools: [{type: "google_search"}]`). */
function requestsSearch(body: Record<string, unknown> | undefined): boolean {
  return Array.isArray(body?.tools) && body.tools.some((t) => isObject(t) && t.type === 'google_search')
}

/** Meters an interaction's creation (JSON or its stream) or a read of it (its usage, once it has ended). */
export class InteractionsMeter implements Meter {
  private usage: Usage | null = null
  private model: string | undefined
  private id: string | undefined
  private tier: unknown
  private complete = false
  /** A read (GET, cancel) found the interaction ended. */
  private ended = false
  /** The usage came from a running count (`step.stop`, a delta's `metadata.total_usage`), not the final one. */
  private running = false
  private text = new OutputText()
  private failure: string | undefined
  private readonly reread: boolean

  constructor(
    endpoint: string,
    private readonly read: (m: unknown) => Usage | null,
  ) {
    this.reread = endpoint !== INTERACTIONS
  }

  /** An Interaction object (the JSON answer, or the one a lifecycle event carries). */
  private interaction(i: unknown, final: boolean): void {
    if (!isObject(i)) return
    if (typeof i.id === 'string' && i.id) this.id = i.id
    if (typeof i.model === 'string' && i.model) this.model = i.model.replace(/^models\//, '')
    if (typeof i.service_tier === 'string') this.tier = i.service_tier
    if (typeof i.status === 'string' && ENDED.has(i.status)) this.ended = true
    const u = interactionsUsage(i.usage, this.tier, this.read)
    if (u) {
      this.usage = u
      this.running = !final
    }
  }

  private runningCount(u: unknown): void {
    if (this.complete) return
    const usage = interactionsUsage(u, this.tier, this.read)
    if (usage) {
      this.usage = usage
      this.running = true
    }
  }

  event(name: string, data: string): void {
    const ev = parseObject(data)
    if (!ev) return
    const type = typeof ev.event_type === 'string' ? ev.event_type : name
    switch (type) {
      case 'interaction.created':
      case 'interaction.start':
        this.interaction(ev.interaction, false)
        break
      case 'interaction.completed':
      case 'interaction.complete': {
        this.complete = true
        this.interaction(ev.interaction, true)
        // A stream's final usage may come as the event's metadata instead (StreamMetadata.total_usage).
        if (isObject(ev.metadata) && (!this.usage || this.running)) {
          const u = interactionsUsage(ev.metadata.total_usage, this.tier, this.read)
          if (u) this.usage = u
        }
        this.running = false
        break
      }
      case 'interaction.status_update':
        if (typeof ev.interaction_id === 'string' && ev.interaction_id && !this.id) this.id = ev.interaction_id
        break
      case 'step.delta':
      case 'content.delta': {
        const d = ev.delta
        if (isObject(d)) {
          if (typeof d.text === 'string') this.text.push(d.text)
          else if (typeof d.arguments === 'string') this.text.push(d.arguments)
          else if (isObject(d.arguments)) this.text.push(JSON.stringify(d.arguments))
        }
        if (isObject(ev.metadata)) this.runningCount(ev.metadata.total_usage)
        break
      }
      case 'step.stop':
        this.runningCount(ev.usage)
        break
      case 'error':
        if (isObject(ev.error) && typeof ev.error.message === 'string') this.failure = ev.error.message
        else if (isObject(ev.error) && ev.error.code !== undefined) this.failure = String(ev.error.code)
        break
    }
  }

  json(body: unknown): void {
    this.complete = true
    this.interaction(body, true)
  }

  result(): MeterResult {
    if (this.reread) {
      // A read of a stored interaction costs nothing itself; an ended one's usage is its creating call's.
      const ended = this.ended || (this.complete && this.usage !== null && !this.running)
      return { usage: null, model: this.model, responseId: this.id, complete: this.complete, backgroundUsage: ended && this.usage ? this.usage : undefined, backgroundEnded: ended || undefined }
    }
    const r: MeterResult = { usage: this.usage, model: this.model, responseId: this.id, complete: this.complete }
    if (this.failure) r.error = this.failure
    if (!this.usage) {
      r.outputText = this.text.join('')
      r.outputScale = this.text.scale
    } else if (this.running && !this.complete) {
      // A stream cut before `interaction.completed`: the last running count is a floor for the output.
      r.partialOutput = true
      r.outputText = this.text.join('')
      r.outputScale = this.text.scale
    }
    return r
  }
}
