import type { CallShape, RequestInfo } from './types'

/**
 * xAI's Batch API (https://docs.x.ai/developers/advanced-api-usage/batch-api) beyond what it shares
 * with OpenAI's (`POST /batches`, `GET /batches`, `GET /batches/{id}`: ./openai-endpoints.ts):
 * requests are added to a batch (`POST /batches/{id}/requests`, each billed when the batch runs
 * it: not free), listed (`GET /batches/{id}/requests`), read back when done
 * (`GET /batches/{id}/results`, paginated) and the batch cancelled (`POST /batches/{id}:cancel`).
 * The reads and the cancel add no spend: free for budget rules (CallShape.free), so a key over its
 * limit still follows its batch and reads its results. The results are not metered: each request's
 * charge is not recorded from them.
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
