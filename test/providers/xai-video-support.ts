import { postJson, request } from '../support/http'
import type { Reply, Responder } from '../support/mock-upstream'

// xAI's video generation in its real shapes (see xai.test.ts): `POST /v1/videos/generations`
// answers `{request_id}` only; `GET /v1/videos/{id}` answers `{status: 'pending'}` until the video
// is done, then the finished body with what it cost, `usage.cost_in_usd_ticks` (10^10 to the
// dollar), billed by the second of video: $0.05 a second at 480p, $0.07 at 720p.

/** xAI's price of grok-imagine-video per second of video, as its finished answers charge it. */
export const PER_SECOND = { '480p': 0.05, '720p': 0.07 } as const
/** xAI's default length of a video whose request names none (seconds). */
export const DEFAULT_SECONDS = 8

/** The ticks xAI charges for `seconds` of video at `resolution`. */
export const ticksOf = (seconds: number, resolution: keyof typeof PER_SECOND): number => Math.round(seconds * PER_SECOND[resolution] * 1e10)
/** ...and what Burnrate records for them (10^10 ticks to the dollar). */
export const chargeOf = (seconds: number, resolution: keyof typeof PER_SECOND): number => ticksOf(seconds, resolution) / 1e10

/** The videos the mock made: what each was asked for, and whether it is done. */
export interface Videos {
  made: Map<string, { seconds: number; resolution: '480p' | '720p'; done: boolean }>
}

export const json = (body: unknown): Reply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

/**
 * The mock xAI: a POST makes a video (`vid_<n>`) and answers its id; with the prompt `cut` its
 * answer is cut before the id (the connection reset mid-body). A GET answers the video pending,
 * or (`done`) finished with the charge of its seconds at its resolution.
 */
export function videoResponder(videos: Videos): Responder {
  let n = 0
  return (req) => {
    const get = /^\/v1\/videos\/([^/?]+)$/.exec(req.url)
    if (req.method === 'GET' && get) {
      const v = videos.made.get(get[1])
      if (!v) return { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":"not found"}' }
      if (!v.done) return json({ status: 'pending' })
      const ticks = ticksOf(v.seconds, v.resolution)
      return json({
        status: 'done',
        video: { url: `https://vidgen.x.ai/xai-vidgen-bucket/xai-video-${get[1]}.mp4`, duration: v.seconds, respect_moderation: true },
        model: 'grok-imagine-video',
        usage: { cost_in_usd_ticks: ticks },
      })
    }
    const body = JSON.parse(req.body.toString())
    const id = `vid_${Date.now()}_${n++}`
    if (body.prompt === 'cut') {
      const whole = Buffer.from(JSON.stringify({ request_id: id }))
      return { status: 200, headers: { 'content-type': 'application/json' }, chunks: [whole.subarray(0, 5), whole.subarray(5)], resetAfterChunks: 1 }
    }
    videos.made.set(id, { seconds: body.duration ?? DEFAULT_SECONDS, resolution: body.resolution ?? '480p', done: false })
    return json({ request_id: id })
  }
}

/** Asks Burnrate at `url` for a video (`duration` and `resolution` as given: left out when undefined). */
export function createVideo(url: string, key: string, opts: { duration?: number; resolution?: string; prompt?: string } = {}) {
  const body: Record<string, unknown> = { model: 'grok-imagine-video', prompt: opts.prompt ?? 'A cat playing with a ball' }
  if (opts.duration !== undefined) body.duration = opts.duration
  if (opts.resolution !== undefined) body.resolution = opts.resolution
  return postJson(`${url}/xai/v1/videos/generations`, body, { authorization: `Bearer ${key}` })
}

/** Polls the video `id` through Burnrate at `url`. */
export function pollVideo(url: string, key: string, id: string) {
  return request(`${url}/xai/v1/videos/${id}`, { headers: { authorization: `Bearer ${key}` } })
}
