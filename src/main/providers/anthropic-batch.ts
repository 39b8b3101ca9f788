import { isObject } from '../metering/usage'
import { AnthropicMeter } from './anthropic'
import { BatchResultsMeter } from './batch-results'
import type { CallShape } from './types'

/** `/v1/messages/batches`, `/v1/messages/batches/{id}`, `…/{id}/cancel`, `…/{id}/results`. */
const BATCHES = /^\/v1\/messages\/batches(?:\/([^/]+)(?:\/(cancel|results))?)?$/

/**
 * Anthropic's Message Batches API by method and path (trailing slashes removed), or null for
 * another path. Creating a batch is a request like any other (a budget rule can refuse it);
 * reading, listing and cancelling batches and reading a batch's results add no spend (the batch
 * is billed for the requests it ran), so they are free: never refused, never counted. The answers
 * that carry a batch's `results_url` are relinked to Burnrate, and the results are read line by
 * line for the requests they hold (AnthropicBatchMeter).
 */
export function anthropicBatchShape(method: string, p: string): Pick<CallShape, 'endpoint' | 'free' | 'lines' | 'relink'> | null {
  if (!p.startsWith('/v1/messages/batches')) return null
  const m = BATCHES.exec(p)
  if (!m) return null
  const [, id, action] = m
  if (!id) return method === 'POST' ? { endpoint: 'messages.batches.create', relink: true } : method === 'GET' ? { endpoint: 'messages.batches.list', free: true, relink: true } : null
  if (action === 'results') return method === 'GET' ? { endpoint: 'messages.batches.results', free: true, lines: true } : null
  if (action === 'cancel') return method === 'POST' ? { endpoint: 'messages.batches.cancel', free: true, relink: true } : null
  if (method === 'GET') return { endpoint: 'messages.batches.retrieve', free: true, relink: true }
  if (method === 'DELETE') return { endpoint: 'messages.batches.delete', free: true }
  return null
}

/** A batch's `results_url`, whatever address it names: the part before `/v1/messages/batches/{id}/results`. */
const RESULTS_URL = /("results_url"\s*:\s*")([^"]*?)(\/v1\/messages\/batches\/[^"/]+\/results)"/g

/**
 * Points every `results_url` in a batch answer (one batch, or a list of them) at `base`, Burnrate's
 * address of Anthropic as the client reached it: the SDKs fetch that absolute URL directly
 * (`messages.batches.results`), so without this the results, and the requests they bill, would go
 * around Burnrate. Null when the answer names none (a batch still in progress has `null`).
 */
export function relinkResultsUrls(text: string, base: string): string | null {
  if (!text.includes('"results_url"')) return null
  let changed = false
  const escaped = JSON.stringify(base).slice(1, -1)
  const out = text.replace(RESULTS_URL, (_all, open: string, _was: string, rest: string) => {
    changed = true
    return `${open}${escaped}${rest}"`
  })
  return changed ? out : null
}

/**
 * Meters a Message Batch's results (`GET /v1/messages/batches/{id}/results`, JSON Lines:
 * `{custom_id, result: {type: "succeeded", message}}`, or `errored`, `canceled`, `expired`, which
 * are not billed). Each request that succeeded is a call of its own, its usage read from its
 * message as the Messages meter reads an answer (cache writes, 1-hour writes, web searches,
 * compaction's iterations), priced at batch rates (`usage.batch`). The results name no time: the
 * calls are dated when their results are read.
 */
export class AnthropicBatchMeter extends BatchResultsMeter {
  constructor(
    private readonly batchId: string,
    now?: () => number,
  ) {
    super(now)
  }

  line(text: string): void {
    const o = this.batchId ? this.parse(text, '"succeeded"') : undefined
    if (!o || typeof o.custom_id !== 'string' || !isObject(o.result) || o.result.type !== 'succeeded' || !isObject(o.result.message)) return
    const m = new AnthropicMeter()
    m.json(o.result.message)
    this.add(`anthropic-batch:${this.batchId}:${o.custom_id}`, this.now(), 'batch.messages', m.result())
  }
}

/** The batch id of a results path (`/v1/messages/batches/{id}/results`), or ''. */
export function batchIdOf(path: string): string {
  const m = BATCHES.exec(path.replace(/\/+$/, ''))
  return m?.[1] ?? ''
}
