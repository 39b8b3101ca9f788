import { OpenAIBatchMeter } from './openai-batch'
import type { UsageReader } from './openai-usage'
import type { CallShape, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/** `/batch/jobs`, `/batch/jobs/{id}`, `/batch/jobs/{id}/cancel`: Mistral's batch jobs. */
const JOBS = /^\/batch\/jobs(?:\/([^/]+?)(\/cancel)?)?$/

/**
 * The shape of a request to Mistral's batch jobs, or null for any other: creating one
 * (`batches.create`) is counted as any request; listing, retrieving (`GET /batch/jobs/{id}`) and
 * cancelling them add no spend, so budget rules neither refuse nor count them (CallShape.free), as
 * OpenAI's: a key over its limit still follows its job to its output file.
 */
export function mistralBatchShape(req: RequestInfo): CallShape | null {
  if (!req.path.startsWith('/batch/jobs')) return null
  const m = JOBS.exec(withoutTrailingSlashes(req.path))
  if (!m) return null
  const endpoint = !m[1]
    ? req.method === 'POST' ? 'batches.create' : req.method === 'GET' ? 'batches.list' : null
    : m[2]
      ? req.method === 'POST' ? 'batches.cancel' : null
      : req.method === 'GET' ? 'batches.retrieve' : null
  if (!endpoint) return null
  return { endpoint, model: '', stream: false, billable: false, free: endpoint !== 'batches.create' || undefined }
}

/**
 * Mistral's Batch API (https://docs.mistral.ai/studio-api/batch-processing, jobs at
 * `/v1/batch/jobs`): a job's answers come back in its output file (`output_file` of the job), read
 * with `GET /v1/files/{id}/content`, one line per request (`{id, custom_id, response: {status_code,
 * body}, error}`, the body the endpoint's answer with its `usage`). Each request whose answer names
 * its `object` (a chat completion, `chat.completion`; embeddings, `list`) is a call of its
 * own, recorded once by the file and its `custom_id` (which Mistral requires unique), its usage
 * read as Mistral's answers are (`usage`), at half of every token price: Mistral's docs give batch
 * processing "a 50% discount". A model the price data does not list is recorded unpriced. Other
 * endpoints' answers, which name no such `object` (OCR, billed by the page), make no row.
 */
export function mistralBatchMeter(fileId: string, usage: UsageReader): OpenAIBatchMeter {
  return new OpenAIBatchMeter('mistral', fileId, undefined, { compatible: true, usage })
}
