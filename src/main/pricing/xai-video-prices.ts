/**
 * xAI's prices of a second of generated video, by model and resolution (USD). The price data
 * (@pydantic/genai-prices 0.1.8) has no grok-imagine-video, nor any unit billed by the second of
 * video, so these are xAI's published prices, used only for what a video is expected to cost
 * before its finished answer reports its charge (`usage.cost_in_usd_ticks`, which is what it is
 * recorded at: ../providers/xai-video.ts):
 *
 * - grok-imagine-video: $0.05 a second at 480p, $0.07 at 720p: xAI's models page
 *   (https://docs.x.ai/developers/models, its grok-imagine-video rows as quoted on May 9, 2026 by
 *   https://yingtu.ai/en/blog/grok-imagine-video-cost-credits: "$0.05 per second for 480p and
 *   $0.07 per second for 720p"); xAI's Imagine overview lists video at "$0.05 / sec, 480p & 720p"
 *   (https://docs.x.ai/developers/model-capabilities/imagine), and a finished 1-second 480p video
 *   reports 500,000,000 ticks, $0.05 (apidoc.cometapi.com's copy of xAI's answer).
 * - grok-imagine-video-1.5 (-preview): $0.08 a second at 480p, $0.14 at 720p, as xAI's model page
 *   lists them (https://www.thecontext.dev/en/news/2026-06-10-grok-imagine-pricing-api-economics/),
 *   and $0.25 at 1080p (https://muapi.ai/grok-imagine-video-1-5, which relays xAI's list prices).
 *
 * The input images and videos an edit or an image-to-video request sends are billed too (xAI: an
 * image $0.002, a second of input video $0.01): left out here; the finished answer's charge has them.
 */
const PER_SECOND_USD: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  'grok-imagine-video': { '480p': 0.05, '720p': 0.07 },
  'grok-imagine-video-1.5': { '480p': 0.08, '720p': 0.14, '1080p': 0.25 },
}

/** The model xAI makes a video with when the request names none. */
const DEFAULT_MODEL = 'grok-imagine-video'

/** What may follow a listed name and still name that model: `-preview`, `-beta`, `-latest`, a date. */
const ALIAS = /^-(?:preview|beta|latest|\d{4}-\d{2}-\d{2})$/

/** The dearest listed price of each resolution, and of any: what a model not listed is expected at. */
const DEAREST: Record<string, number> = {}
let dearestOfAll = 0
for (const prices of Object.values(PER_SECOND_USD)) {
  for (const [res, usd] of Object.entries(prices)) {
    DEAREST[res] = Math.max(DEAREST[res] ?? 0, usd)
    dearestOfAll = Math.max(dearestOfAll, usd)
  }
}

/**
 * What `seconds` of video of `model` at `resolution` cost at xAI's published price. A model listed
 * under a `-preview`, `-beta`, `-latest` or dated name is that model; one not listed (a new one, a
 * `-lite`) is expected at the dearest listed price of its resolution, and a
 * resolution a model does not list at that model's dearest: a budget holds too much for it rather
 * than too little, until its finished answer says what it cost.
 */
export function xaiVideoUsd(model: string, seconds: number, resolution: string): number {
  const name = model === '' ? DEFAULT_MODEL : Object.keys(PER_SECOND_USD).find((n) => model === n || (model.startsWith(n) && ALIAS.test(model.slice(n.length))))
  const prices = name ? PER_SECOND_USD[name] : undefined
  const perSecond = prices ? (prices[resolution] ?? Math.max(...Object.values(prices))) : (DEAREST[resolution] ?? dearestOfAll)
  return seconds * perSecond
}
