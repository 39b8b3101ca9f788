import { count, emptyUsage, isObject, type Usage } from '../metering/usage'
import { AnthropicMeter } from './anthropic-meter'
import { GeminiMeter, geminiCompatUsage, geminiUsage, inspectGemini } from './gemini'
import { InteractionsMeter, interactionsShape, isInteractions } from './gemini-interactions'
import { inspectOpenAI } from './openai-endpoints'
import { OpenAIMeter } from './openai-meter'
import type { CallShape, Meter, MeterResult, Provider, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Google Cloud's Vertex AI, for Claude (`publishers/anthropic`, as Claude Code with
 * `CLAUDE_CODE_USE_VERTEX` and Anthropic's Vertex SDKs call it) and Gemini (`publishers/google`).
 * A model call names its project, location, publisher and model in the path:
 * `/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}`.
 *
 * - Claude: `:rawPredict` (JSON, or a stream when the body says `stream: true`) and
 *   `:streamRawPredict` take and answer Anthropic's Messages API (the body has no `model`;
 *   `anthropic_version: "vertex-2023-10-16"`), metered as Anthropic's answers are; fast mode is
 *   asked as there (`speed: "fast"`) and its answer's `usage.speed` says it served it. Token counting
 *   is the model `count-tokens` with `:rawPredict`, and costs nothing.
 * - Gemini: `:generateContent` and `:streamGenerateContent` take and answer Gemini's API, metered
 *   as Gemini's answers are; an embedding model's `:predict` is billed by the tokens its answer
 *   counts; `:countTokens` and the rest cost nothing.
 * - Mistral (`publishers/mistralai`): `:rawPredict` and `:streamRawPredict` take and answer
 *   Mistral's chat completions, metered as OpenAI's; the price data has no Vertex price for them,
 *   so their tokens are recorded unpriced (a billed call, never a free one).
 * - The Interactions API (`…/locations/{location}/interactions`, `/{id}`, `/{id}/cancel`: what
 *   Google's Gen AI SDK's `client.interactions` sends with `vertexai: true`), the Gemini API's
 *   (`/v1beta/interactions`) below a location: shaped and metered as that one is (./gemini-interactions.ts).
 * - Vertex AI's OpenAI-compatible Chat Completions API (`…/locations/{location}/endpoints/openapi/chat/completions`,
 *   "Using OpenAI libraries with Vertex AI"), billed per token as the Gemini model it names
 *   (`google/gemini-2.5-flash`): metered as Gemini's OpenAI-compatible API is, priced without the
 *   `google/` prefix.
 *
 * Calls are priced with @pydantic/genai-prices' Google provider, which prices Claude models
 * through Anthropic's list (its fallback) and Vertex model ids with their `@version`; a Claude
 * call through a regional endpoint is raised by the premium Vertex AI bills there (regionalPremium). With no
 * `providers.vertex.base_url`, each call goes to the location its path names: `global` to
 * `https://aiplatform.googleapis.com`, a multi-region (`us`, `eu`) to
 * `https://aiplatform.{us|eu}.rep.googleapis.com`, a region to `https://{region}-aiplatform.googleapis.com`.
 * A multi-region keeps the data in its geography as a region does, and is priced as one (regionalPremium).
 * The client's Google access token (`Authorization: Bearer`) is passed on as it came.
 */

const MODEL_CALL = /^\/v1[a-z0-9]*\/projects\/[^/]+\/locations\/([^/]+)\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/
/** The OpenAI-compatible API's paths below a location's `endpoints/openapi`. */
const OPENAPI = /^\/v1[a-z0-9]*\/projects\/[^/]+\/locations\/[^/]+\/endpoints\/openapi(\/.*)$/
/** The Interactions API below a location: its version, and its path as the Gemini API has it without the project and location. */
const INTERACTIONS = /^(\/v1[a-z0-9]*)\/projects\/[^/]+\/locations\/[^/]+(\/interactions(?:\/.*)?)$/
/** A Google model's name in the OpenAI-compatible API (`google/gemini-2.5-flash`): the price data's name is without it. */
const GOOGLE_PREFIX = /^google\//
/** Any path below a location (model calls, and the rest of the API). */
const LOCATION = /^\/v1[a-z0-9]*\/projects\/[^/]+\/locations\/([^/]+)(?:\/|$)/
/** A region's name as Google Cloud spells them (`us-east5`, `europe-west1`, `northamerica-northeast1`). */
const REGION = /^[a-z]+(?:-[a-z]+)+[0-9]+$/
/**
 * Vertex AI's multi-region locations (Claude's and Gemini's "multi-region endpoints": one
 * geography's regions pooled), each served by its own host, `https://aiplatform.{us|eu}.rep.googleapis.com`
 * (Anthropic's Vertex SDK for `region: "us"`/`"eu"`, Google's Gen AI SDK's `MULTI_REGIONAL_LOCATIONS`).
 */
const MULTI_REGIONS = new Set(['us', 'eu'])

interface ModelCall {
  location: string
  publisher: string
  model: string
  method: string
}

/** The last path read and what it names: a call's inspect and its meter read the same path, one after the other. */
let last: { path: string; call: ModelCall | null } = { path: '', call: null }

function modelCall(path: string): ModelCall | null {
  if (path === last.path) return last.call
  const m = MODEL_CALL.exec(withoutTrailingSlashes(path))
  const call = m ? { location: m[1], publisher: m[2], model: safeDecode(m[3]), method: m[4] } : null
  last = { path, call }
  return call
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/**
 * The upstream base URL of a request's location when none is configured: `global`, the
 * multi-regions (`us`, `eu`) and the regions only, so a path can never name another host; null
 * for anything else.
 */
export function vertexBaseUrlOf(path: string): string | null {
  const loc = LOCATION.exec(path)?.[1]
  if (loc === 'global') return 'https://aiplatform.googleapis.com'
  if (loc !== undefined && MULTI_REGIONS.has(loc)) return `https://aiplatform.${loc}.rep.googleapis.com`
  if (loc !== undefined && REGION.test(loc)) return `https://${loc}-aiplatform.googleapis.com`
  return null
}

/**
 * Claude's model version in a model id (`claude-sonnet-4-5@20250929` 4.5, `claude-3-7-sonnet@…`
 * 3.7, `claude-opus-4-6` 4.6, `claude-sonnet-4@…` and `claude-sonnet-4-20250514` 4.0), or null
 * for an id that does not name one.
 */
export function claudeVersion(model: string): { major: number; minor: number } | null {
  const m = /^claude-(?:[a-z]+-)?(\d+)(?:-(\d{1,2}))?(?=$|[-@])/.exec(model)
  return m ? { major: Number(m[1]), minor: m[2] === undefined ? 0 : Number(m[2]) } : null
}

/**
 * Whether a Claude call through `location` is billed with the data-residency premium: on Vertex
 * AI, from Claude Sonnet 4.5 on (every model since), a regional endpoint costs
 * 10% more than the `global` one; earlier models cost the same everywhere.
 */
export function regionalPremium(location: string, model: string): boolean {
  if (location === 'global') return false
  const v = claudeVersion(model)
  return v !== null && (v.major > 4 || (v.major === 4 && v.minor >= 5))
}

/** The Gemini API's path of an Interactions API request below a location (`/v1beta1/interactions/{id}`), or null. */
function interactionsPath(path: string): string | null {
  if (!path.includes('/interactions')) return null
  const m = INTERACTIONS.exec(withoutTrailingSlashes(path))
  return m ? m[1] + m[2] : null
}

export function inspectVertex(req: RequestInfo): CallShape {
  const interactions = interactionsPath(req.path)
  if (interactions !== null) {
    const shape = interactionsShape({ ...req, path: interactions })
    if (shape) return shape
  }
  const openapi = OPENAPI.exec(withoutTrailingSlashes(req.path))
  if (openapi) {
    const shape = inspectOpenAI({ ...req, path: openapi[1] })
    return { ...shape, model: shape.model.replace(GOOGLE_PREFIX, '') }
  }
  const call = modelCall(req.path)
  const post = req.method === 'POST'
  if (call?.publisher === 'anthropic' && (call.method === 'rawPredict' || call.method === 'streamRawPredict')) {
    if (call.model === 'count-tokens') return { endpoint: 'count_tokens', model: typeof req.body?.model === 'string' ? req.body.model : '', stream: false, billable: false }
    const body = isObject(req.body) ? req.body : undefined
    const shape: CallShape = { endpoint: 'messages', model: call.model, stream: call.method === 'streamRawPredict' || body?.stream === true, billable: post }
    if (regionalPremium(call.location, call.model)) shape.dataResidency = true
    // Fast mode (the Messages body's `speed: "fast"`, as on the Claude API): budgets reserve it at
    // the model's fast price, and an answer cut before its usage is estimated so.
    if (post && body?.speed === 'fast') shape.fast = true
    return shape
  }
  if (call && isMistral(call)) {
    const shape = inspectOpenAI({ ...req, path: '/chat/completions' })
    return { ...shape, model: call.model, stream: call.method === 'streamRawPredict' || shape.stream, billable: post }
  }
  if (call?.publisher === 'google') {
    if (isEmbeddings(call)) return { endpoint: 'predict', model: call.model, stream: false, billable: post }
    // Gemini's own shape of the same call (`/v1beta/models/{model}:{method}`).
    return inspectGemini({ ...req, path: `/v1beta/models/${call.model}:${call.method}` })
  }
  return { endpoint: 'other', model: call?.model ?? '', stream: false, billable: false }
}

export const vertex: Provider = {
  name: 'vertex',
  pricingId: 'google',
  defaultBaseUrl: null,
  mount: '/vertex',
  credentials: ['authorization'],
  place: (path) => {
    const baseUrl = vertexBaseUrlOf(path)
    return baseUrl ? { path, baseUrl } : null
  },
  noUpstreamHint: 'call a location Vertex AI has (global, us, eu or a region such as us-east5) or set providers.vertex.base_url in the config',
  inspect: inspectVertex,
  meter: (shape, req): Meter => {
    if (OPENAPI.test(withoutTrailingSlashes(req.path))) return new VertexOpenAIMeter(shape.endpoint)
    if (isInteractions(shape.endpoint)) return new InteractionsMeter(shape.endpoint, geminiUsage)
    const call = modelCall(req.path)
    if (call && isMistral(call)) return new OpenAIMeter({ endpoint: shape.endpoint })
    if (call && call.publisher === 'google' && isEmbeddings(call)) return new EmbeddingsMeter()
    return call?.publisher === 'google' ? new GeminiMeter() : new AnthropicMeter(shape.fast === true)
  },
}

/**
 * Mistral AI's models on Vertex AI (`publishers/mistralai`, "pay as you go"): `:rawPredict` and
 * `:streamRawPredict` take and answer Mistral's chat completions (docs.mistral.ai, "Vertex AI"),
 * whose `usage` is OpenAI's shape.
 */
function isMistral(call: ModelCall): boolean {
  return call.publisher === 'mistralai' && (call.method === 'rawPredict' || call.method === 'streamRawPredict')
}

/**
 * Google's embedding models on Vertex AI (`gemini-embedding-001`, `text-embedding-005`…) are called
 * with `:predict` (Vertex AI's "Get text embeddings", and what the Gen AI SDK's `embed_content`
 * sends there), billed by their input.
 */
function isEmbeddings(call: ModelCall): boolean {
  return call.method === 'predict' && /embedding/i.test(call.model)
}

/** An embeddings `:predict` answer: each prediction's `embeddings.statistics.token_count`, the input tokens. */
class EmbeddingsMeter implements Meter {
  private usage: Usage | null = null
  private complete = false

  event(): void {
    // answered as JSON only
  }

  json(body: unknown): void {
    this.complete = true
    if (!isObject(body) || !Array.isArray(body.predictions)) return
    let tokens = 0
    let counted = false
    for (const p of body.predictions) {
      const stats = isObject(p) && isObject(p.embeddings) ? p.embeddings.statistics : undefined
      if (!isObject(stats) || typeof stats.token_count !== 'number') continue
      tokens += count(stats.token_count)
      counted = true
    }
    if (!counted) return
    this.usage = emptyUsage()
    this.usage.input_tokens = tokens
  }

  result(): MeterResult {
    return { usage: this.usage, complete: this.complete }
  }
}

/** The OpenAI-compatible API's answers, read as Gemini's OpenAI-compatible ones; the model they name priced without `google/`. */
class VertexOpenAIMeter extends OpenAIMeter {
  constructor(endpoint: string) {
    super({ endpoint, usage: geminiCompatUsage })
  }

  override result(): MeterResult {
    const r = super.result()
    return r.model ? { ...r, model: r.model.replace(GOOGLE_PREFIX, '') } : r
  }
}
