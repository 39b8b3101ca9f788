import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * The Gemini Live API's socket path (./gemini-live.ts): `/ws/google.ai.generativelanguage.<v1beta|
 * v1alpha>.GenerativeService.BidiGenerateContent`, or `…BidiGenerateContentConstrained` (an
 * ephemeral token's, `?access_token=`).
 */
const LIVE_PATH = /^\/ws\/google\.ai\.generativelanguage\.v1(?:alpha|beta)\.GenerativeService\.BidiGenerateContent(?:Constrained)?$/

/** The bare path's prefix, which the router sends to Gemini (an SDK whose base URL is Burnrate's own address). */
export const LIVE_PREFIX = '/ws/google.ai.generativelanguage.'

/** Whether a Gemini path is the Live API's socket (trailing slashes or not, as every path is read). */
export function isLivePath(path: string): boolean {
  return LIVE_PATH.test(withoutTrailingSlashes(path))
}
