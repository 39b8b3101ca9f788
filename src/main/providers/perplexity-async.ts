import { isObject } from '../metering/usage'
import type { UsageReader } from './openai-usage'
import { pathId } from './path-id'
import type { CallShape, Meter, MeterResult, RequestInfo } from './types'

/**
 * Perplexity's asynchronous Sonar API (docs.perplexity.ai, "Create Async Chat Completion" and "Get
 * Async Chat Completion Response"; perplexityai/perplexity-node's `client.async.chat.completions`),
 * what a Sonar Deep Research call that runs for minutes is sent through: `POST
 * /async/chat/completions` (`/v1/async/sonar` in the newer docs) with `{request: {model,
 * messages…}}` answers only the job (`{id, model, status: "CREATED"}`); `GET …/{id}` is polled
 * until its `status` is `COMPLETED` (or `FAILED`), and only that answer's `response.usage` says what
 * the call used and was charged (`cost.total_cost`). So the POST, the request that is billed, is
 * recorded at once as `async.chat.completions`, estimated and unpriced at $0
 * (`MeterResult.chargeLater`), and takes that usage when a finished answer about it passes
 * through, once, as a background response does (../pricing/background.ts); the polls and the list
 * are free reads: never billed, never counted or refused by a budget rule.
 */

const CREATE = /^\/(?:async\/chat\/completions|v1\/async\/sonar)\/*$/
const READ = /^\/(?:async\/chat\/completions|v1\/async\/sonar)\/([^/]+?)\/*$/

export const ASYNC_CREATE = 'async.chat.completions'
const ASYNC_READ = 'async.chat.completions.retrieve'
const ASYNC_LIST = 'async.chat.completions.list'

/** The shape of an async Sonar request, or null when the request is not one. */
export function perplexityAsyncShape(req: RequestInfo): CallShape | null {
  if (!req.path.startsWith('/async/') && !req.path.startsWith('/v1/async/')) return null
  if (CREATE.test(req.path)) {
    if (req.method === 'GET') return { endpoint: ASYNC_LIST, model: '', stream: false, billable: false, free: true }
    if (req.method !== 'POST') return null
    const inner = isObject(req.body) && isObject(req.body.request) ? req.body.request : {}
    return { endpoint: ASYNC_CREATE, model: typeof inner.model === 'string' ? inner.model : '', stream: false, billable: true }
  }
  if (req.method === 'GET' && READ.test(req.path)) return { endpoint: ASYNC_READ, model: '', stream: false, billable: false, free: true }
  return null
}

export const isPerplexityAsync = (endpoint: string): boolean => endpoint === ASYNC_CREATE || endpoint === ASYNC_READ

/** Meters a job's creation (its id) or a read of it (its usage, once it has ended). */
export class PerplexityAsyncMeter implements Meter {
  private id: string | undefined
  private model: string | undefined
  private ended = false
  private usage: MeterResult['backgroundUsage']
  private complete = false

  constructor(
    private readonly endpoint: string,
    path: string,
    private readonly read: UsageReader,
  ) {
    if (endpoint === ASYNC_READ) this.id = pathId(READ, path)
  }

  event(): void {
    // answered as JSON only
  }

  json(body: unknown): void {
    this.complete = true
    if (!isObject(body)) return
    if (typeof body.model === 'string' && body.model) this.model = body.model
    if (this.endpoint === ASYNC_CREATE) {
      if (typeof body.id === 'string' && body.id) this.id = body.id
      return
    }
    if (body.status !== 'COMPLETED' && body.status !== 'FAILED') return
    this.ended = true
    const u = isObject(body.response) ? this.read(body.response.usage) : null
    if (u) this.usage = u
  }

  result(): MeterResult {
    if (this.endpoint === ASYNC_CREATE) return { usage: null, model: this.model, responseId: this.id, complete: this.complete, chargeLater: true }
    return { usage: null, model: this.model, responseId: this.id, complete: this.complete, backgroundUsage: this.usage, backgroundEnded: this.ended || undefined }
  }
}
