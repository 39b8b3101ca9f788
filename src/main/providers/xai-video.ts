import { isObject } from '../metering/usage'
import type { UsageReader } from './openai-usage'
import type { CallShape, Meter, MeterResult, RequestInfo } from './types'

/**
 * xAI's video generation (grok-imagine-video), https://docs.x.ai/developers/model-capabilities/video/generation:
 * asynchronous. `POST /videos/generations` (and `/videos/edits`, `/videos/extensions`) answers
 * only a `request_id`; `GET /videos/{request_id}` is polled until its `status` is `done` (or
 * `failed`, `expired`), and only that finished answer says what the video cost, in its
 * `usage.cost_in_usd_ticks` (billed by the second of video). So the POST, the request that makes
 * (and is billed for) a video, is recorded at once as `videos`, estimated and unpriced at $0
 * (`MeterResult.chargeLater`), and takes the charge when a finished answer about it passes
 * through, once, as a background response does (../pricing/background.ts); the polls
 * (`videos.retrieve`) are free reads: never billed, never counted or refused by a budget rule.
 */

/** `POST /videos/generations`, `/videos/edits`, `/videos/extensions`: each makes one video. */
const CREATE = /^\/videos\/(?:generations|edits|extensions)\/*$/
/** `GET /videos/{request_id}`: a video's status, and its charge once it is done. */
const READ = /^\/videos\/([^/]+?)\/*$/

/** The shape of a video request, or null when the request is not one. */
export function xaiVideoShape(req: RequestInfo): CallShape | null {
  if (!req.path.startsWith('/videos/')) return null
  if (req.method === 'POST' && CREATE.test(req.path)) {
    const model = isObject(req.body) && typeof req.body.model === 'string' ? req.body.model : ''
    return { endpoint: 'videos', model, stream: false, billable: true }
  }
  if (req.method === 'GET' && READ.test(req.path)) return { endpoint: 'videos.retrieve', model: '', stream: false, billable: false, free: true }
  return null
}

export const isXaiVideo = (endpoint: string): boolean => endpoint === 'videos' || endpoint === 'videos.retrieve'

/** What a video's status answer ends in: its charge is then known (or never will be). */
const ENDED = new Set(['done', 'failed', 'expired'])

/** Meters a video's creation (its id) or a read of it (its charge, once it has ended). */
export class XaiVideoMeter implements Meter {
  private id: string | undefined
  private model: string | undefined
  private ended = false
  private charge: MeterResult['backgroundUsage']
  private complete = false

  constructor(
    private readonly endpoint: string,
    path: string,
    private readonly usage: UsageReader,
  ) {
    if (endpoint === 'videos.retrieve') this.id = idOf(path)
  }

  event(): void {
    // answered as JSON only
  }

  json(body: unknown): void {
    this.complete = true
    if (!isObject(body)) return
    if (typeof body.model === 'string' && body.model) this.model = body.model
    if (this.endpoint === 'videos') {
      if (typeof body.request_id === 'string' && body.request_id) this.id = body.request_id
      return
    }
    // (An answer without a status but with the video's URL is finished too, as vercel/ai reads it.)
    const finished = typeof body.status === 'string' ? ENDED.has(body.status) : isObject(body.video) && typeof body.video.url === 'string'
    if (finished) {
      this.ended = true
      // Only a charge it reports: an answer without one leaves the call estimated and unpriced, not $0.
      const u = this.usage(body.usage)
      if (u?.provider_cost_usd !== undefined) this.charge = u
    }
  }

  result(): MeterResult {
    if (this.endpoint === 'videos') return { usage: null, model: this.model, responseId: this.id, complete: this.complete, chargeLater: true }
    return { usage: null, model: this.model, responseId: this.id, complete: this.complete, backgroundUsage: this.charge, backgroundEnded: this.ended || undefined }
  }
}

function idOf(path: string): string | undefined {
  const id = READ.exec(path)?.[1]
  if (!id) return undefined
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}
