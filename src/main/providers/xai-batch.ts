import { isObject } from '../metering/usage'
import { BatchResultsMeter } from './batch-results'
import { OpenAIMeter } from './openai-meter'
import type { UsageReader } from './openai-usage'
import type { CallShape, RequestInfo } from './types'

/**
 * xAI's Batch API (https://docs.x.ai/developers/advanced-api-usage/batch-api) beyond what it shares
 * with OpenAI's (`POST /batches`, `GET /batches`, `GET /batches/{id}`: ./openai-endpoints.ts):
 * requests are added to a batch (`POST /batches/{id}/requests`, each billed when the batch runs
 * it: not free), listed (`GET /batches/{id}/requests`), read back when done
 * (`GET /batches/{id}/results`, paginated) and the batch cancelled (`POST /batches/{id}:cancel`).
 * The reads and the cancel add no spend: free for budget rules (CallShape.free), so a key over its
 * limit still follows its batch and reads its results. The results are metered (XaiBatchResultsMeter).
 */
const BATCH = /^\/batches\/([^/:]+)(:cancel|\/requests|\/results)\/*$/

/** The shape of a request to xAI's own batch endpoints, or null for any other. */
export function xaiBatchShape(req: RequestInfo): CallShape | null {
  const m = req.path.startsWith('/batches/') ? BATCH.exec(req.path) : null
  if (!m) return null
  const endpoint = endpointOf(req.method, m[2])
  if (!endpoint) return null
  return { endpoint, model: '', stream: false, billable: false, free: endpoint !== 'batches.requests.add' || undefined }
}

function endpointOf(method: string, tail: string): string | null {
  if (tail === ':cancel') return method === 'POST' ? 'batches.cancel' : null
  if (tail === '/results') return method === 'GET' ? 'batches.results' : null
  return method === 'GET' ? 'batches.requests.list' : method === 'POST' ? 'batches.requests.add' : null
}

/** The batch id of a results path (`/batches/{id}/results`), or ''. */
export function xaiBatchIdOf(path: string): string {
  const m = BATCH.exec(path)
  return m && m[2] === '/results' ? m[1] : ''
}

/** A result's answer by its kind (`batch_result.response.<kind>`), and the endpoint it ran on. */
const KINDS: Record<string, string> = {
  chat_get_completion: 'chat.completions',
  image_generation: 'images',
  video_generation: 'videos',
}

/** What `json` reads of a page too large to hold (images' base64 in it): never the answers' content. */
const LARGE_JSON_PATHS: readonly string[] = [
  '$.results.*.batch_request_id',
  ...Object.keys(KINDS).flatMap((k) => ['id', 'model', 'created', 'usage', 'request_id'].map((f) => `$.results.*.batch_result.response.${k}.${f}`)),
]

/**
 * Meters a page of an xAI batch's results (`GET /v1/batches/{id}/results`: `{results:
 * [{batch_request_id, batch_result: {response: {chat_get_completion | image_generation |
 * video_generation: <the endpoint's answer>}} | {error}}], pagination_token}`, as xAI's SDK types
 * it). Each result with usage is a call of its own, keyed by the batch and its
 * `batch_request_id`, so a page read again records nothing more: its usage read as xAI's own
 * answer's (`usage`, the provider's reader), so the charge it reports (`cost_in_usd_ticks`, what
 * xAI billed after its discounts) is its cost; one without is priced from its tokens at batch
 * rates (half, as xAI bills its Batch API). An error is not billed and makes no row.
 */
export class XaiBatchResultsMeter extends BatchResultsMeter {
  readonly largeJsonPaths = LARGE_JSON_PATHS

  constructor(
    private readonly batchId: string,
    private readonly usage: UsageReader,
    now?: () => number,
  ) {
    super(now)
  }

  override json(body: unknown): void {
    if (!this.batchId || !isObject(body) || !Array.isArray(body.results)) return
    for (const r of body.results) {
      if (!isObject(r) || typeof r.batch_request_id !== 'string' || !r.batch_request_id) continue
      const response = isObject(r.batch_result) ? r.batch_result.response : undefined
      if (!isObject(response)) continue
      for (const kind in KINDS) {
        const answer = response[kind]
        if (!isObject(answer)) continue
        const m = new OpenAIMeter({ endpoint: KINDS[kind], usage: this.usage })
        m.json(answer)
        this.add(`xai-batch:${this.batchId}:${r.batch_request_id.slice(0, 200)}`, ranAt(answer.created, this.now()), KINDS[kind], m.result())
        break
      }
    }
  }
}

/** When a request ran: its answer's `created` (seconds), else `now`. */
function ranAt(created: unknown, now: number): number {
  return typeof created === 'number' && Number.isFinite(created) && created > 0 ? Math.round(created * 1000) : now
}
