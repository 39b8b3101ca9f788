import { isObject } from '../metering/usage'
import { AnthropicMeter } from './anthropic-meter'
import { BatchResultsMeter } from './batch-results'
import type { CallShape } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

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
  // Ended batches' ends, for dating their requests when their results are read (batchEnded).
  if (text.includes('"ended_at"')) noteEnds(text)
  let changed = false
  const escaped = JSON.stringify(base).slice(1, -1)
  const out = text.replace(RESULTS_URL, (_all, open: string, _was: string, rest: string) => {
    changed = true
    return `${open}${escaped}${rest}"`
  })
  return changed ? out : null
}

/** When each recently seen batch ended (ms), by id: the results lines carry no time of their own. */
const ENDED = new Map<string, number>()
/** Batches remembered at most (their answers come from clients: bounded). */
const MAX_ENDED = 1000

function noteEnds(text: string): void {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return
  }
  const batches = isObject(body) && Array.isArray(body.data) ? body.data : [body]
  for (const b of batches) {
    if (!isObject(b) || typeof b.id !== 'string' || typeof b.ended_at !== 'string') continue
    const at = Date.parse(b.ended_at)
    if (!Number.isFinite(at)) continue
    if (ENDED.size >= MAX_ENDED && !ENDED.has(b.id)) ENDED.delete(ENDED.keys().next().value as string)
    ENDED.set(b.id, at)
  }
}

/**
 * When a batch ended, as its last answer through this Burnrate said (the SDKs retrieve a batch
 * just before reading its results), never after `now`; else `now`.
 */
export function batchEnded(id: string, now: number): number {
  const at = ENDED.get(id)
  return at !== undefined && at <= now ? at : now
}

/**
 * Meters a Message Batch's results (`GET /v1/messages/batches/{id}/results`, JSON Lines:
 * `{custom_id, result: {type: "succeeded", message}}`, or `errored`, `canceled`, `expired`, which
 * are not billed). Each request that succeeded is a call of its own, its usage read from its
 * message as the Messages meter reads an answer (cache writes, 1-hour writes, web searches,
 * compaction's iterations), priced at batch rates (`usage.batch`). The results name no time: the
 * calls are dated when the batch ended, as a batch answer through this Burnrate said (the SDKs
 * retrieve the batch first), else when their results are read.
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
    this.add(`anthropic-batch:${this.batchId}:${o.custom_id}`, batchEnded(this.batchId, this.now()), 'messages', m.result())
  }
}

/** The batch id of a results path (`/v1/messages/batches/{id}/results`), or ''. */
export function batchIdOf(path: string): string {
  const m = BATCHES.exec(withoutTrailingSlashes(path))
  return m?.[1] ?? ''
}
