import { isObject } from '../metering/usage'
import { xaiVideoUsd } from '../pricing/xai-video-prices'
import type { UsageReader } from './openai-usage'
import { pathId } from './path-id'
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
 * Meanwhile a `block` rule holds what the request says the video will cost (`CallShape.expectedUsd`:
 * its seconds at the model's per-second price, ../pricing/xai-video-prices.ts), and a POST whose
 * answer is cut before its `request_id`, which no later answer can be matched to, is recorded at
 * that, estimated.
 */

/** `POST /videos/generations`, `/videos/edits`, `/videos/extensions`: each makes one video. */
const CREATE = /^\/videos\/(generations|edits|extensions)\/*$/
/** `GET /videos/{request_id}`: a video's status, and its charge once it is done. */
const READ = /^\/videos\/([^/]+?)\/*$/

/** The shape of a video request, or null when the request is not one. */
export function xaiVideoShape(req: RequestInfo): CallShape | null {
  if (!req.path.startsWith('/videos/')) return null
  const create = req.method === 'POST' ? CREATE.exec(req.path) : null
  if (create) {
    const body = isObject(req.body) ? req.body : {}
    const model = typeof body.model === 'string' ? body.model : ''
    const expectedUsd = xaiVideoUsd(model, secondsOf(body, create[1] === 'edits'), resolutionOf(body))
    return { endpoint: 'videos', model, stream: false, billable: true, expectedUsd }
  }
  if (req.method === 'GET' && READ.test(req.path)) return { endpoint: 'videos.retrieve', model: '', stream: false, billable: false, free: true }
  return null
}

/**
 * xAI's defaults (https://docs.x.ai/developers/rest-api-reference/inference/videos, `duration`:
 * "Video duration in seconds. Range: [1, 15]. Default: 8"; `resolution` "480p" or "720p", 480p
 * unless asked). An edit keeps its input video's length, at most 8.7 seconds
 * (https://docs.x.ai/developers/model-capabilities/video, "Limitations"): expected at that most.
 */
const DEFAULT_SECONDS = 8
const EDIT_MAX_SECONDS = 8.7
const DEFAULT_RESOLUTION = '480p'

/** The seconds of video a request asks for (an edit's `duration` is ignored by xAI). */
function secondsOf(body: Record<string, unknown>, edit: boolean): number {
  if (edit) return EDIT_MAX_SECONDS
  const d = body.duration
  return typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : DEFAULT_SECONDS
}

/** The resolution a request asks for: `resolution`, else its `size` ("1280x720": by its shorter side), else xAI's default. */
function resolutionOf(body: Record<string, unknown>): string {
  if (typeof body.resolution === 'string' && body.resolution) return body.resolution.toLowerCase()
  const size = typeof body.size === 'string' ? /^(\d+)x(\d+)$/.exec(body.size) : null
  if (!size) return DEFAULT_RESOLUTION
  const side = Math.min(Number(size[1]), Number(size[2]))
  return side <= 480 ? '480p' : side <= 720 ? '720p' : '1080p'
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
    if (endpoint === 'videos.retrieve') this.id = pathId(READ, path)
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
