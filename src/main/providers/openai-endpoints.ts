import { isObject } from '../metering/usage'
import type { CallShape, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * What a request to OpenAI's API is, by method, path and body: its endpoint (`chat.completions`,
 * `responses.retrieve`, `batches.create`…), whether it is billed, free for budget rules or a
 * Batch API results file, and the model and stream it asks for. Shared by every API that speaks
 * OpenAI's (Azure OpenAI, ChatGPT's Codex backend, the OpenAI-compatible providers).
 */

function openaiEndpoint(path: string): string {
  const p = withoutTrailingSlashes(path)
  if (p === '/chat/completions') return 'chat.completions'
  if (p === '/responses') return 'responses'
  if (p === '/completions') return 'completions'
  // Mistral's fill-in-the-middle (Codestral), answered with OpenAI's usage.
  if (p === '/fim/completions') return 'fim.completions'
  if (p === '/embeddings') return 'embeddings'
  if (p.startsWith('/images/')) return 'images'
  if (p.startsWith('/audio/')) return 'audio'
  // The Realtime API's socket (`GET /realtime?model=…` upgraded): each response on it is a call
  // (../proxy/ws/realtime-calls.ts), and so is each input transcription.
  if (p === '/realtime') return 'realtime'
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

const BILLABLE = new Set(['chat.completions', 'responses', 'responses.compact', 'completions', 'fim.completions', 'embeddings', 'images', 'audio', 'realtime'])
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
  const kind = openaiEndpointShape(endpoint)
  // Its fields named, not spread: a literal with a spread in it is built field by field at run time.
  return {
    endpoint,
    model: typeof body?.model === 'string' ? body.model : '',
    stream,
    billable: kind.billable,
    free: kind.free,
    lines: kind.lines,
    mayLackUsage: stream && endpoint !== 'responses' && body?.stream_options?.include_usage !== true,
  }
}

/**
 * OpenAI's and Azure OpenAI's Fast mode (Priority processing until July 2026), asked for by the
 * request (`CallShape.fast`), or the tier left to the project, which may be it (`CallShape.projectTier`).
 */
export function withFastTier(shape: CallShape, body: unknown): CallShape {
  const tier = isObject(body) ? body.service_tier : undefined
  if (tier === 'priority' || tier === 'fast') shape.fast = true
  else if (tier === undefined || tier === null || tier === 'auto') shape.projectTier = true
  return shape
}

/** The `service_tier` a request's body asks for (`OpenAIMeterOptions.requestTier`), or undefined. */
export function requestTier(body: unknown): unknown {
  return isObject(body) ? body.service_tier : undefined
}

/** OpenAI's Chat Completions search models (and their dated versions). */
const SEARCH_MODEL = /^gpt-4o(?:-mini)?-search-preview/

/**
 * A Chat Completions request to one of OpenAI's search models, which search the web before every
 * answer ("In Chat Completions, the model always retrieves information from the web before
 * responding", OpenAI's web search guide): `CallShape.webSearchEachCall`. Its model is one of them,
 * or it sets `web_search_options` (which only they take).
 */
export function withChatSearch(shape: CallShape, body: unknown): CallShape {
  if (shape.endpoint === 'chat.completions' && (SEARCH_MODEL.test(shape.model) || (isObject(body) && isObject(body.web_search_options)))) shape.webSearchEachCall = true
  return shape
}
