/**
 * A call's usage as @pydantic/genai-prices reads it: the token counts and per-use counts it has
 * prices for (`toLibraryUsage`), and the modality splits a meter found (`withExtra`).
 */
import type { Usage } from '../metering/usage'

export function toLibraryUsage(u: Usage): Record<string, number> {
  const out: Record<string, number> = { input_tokens: u.input_tokens, output_tokens: u.output_tokens }
  if (u.cache_read_tokens) out.cache_read_tokens = u.cache_read_tokens
  if (u.cache_write_tokens) out.cache_write_tokens = u.cache_write_tokens
  if (u.cache_write_1h_tokens) out.cache_write_1h_tokens = u.cache_write_1h_tokens
  if (u.web_searches) out.web_searches = u.web_searches
  if (u.storage_searches) out.storage_searches = u.storage_searches
  return out
}

/** The prompt modalities a meter may split out (`input_<m>_tokens`), each with a price of its own. */
const PROMPT_MODALITIES = ['audio', 'image', 'video'] as const
/** The prompt-cache counts (parts of the prompt), and the library's name of each one's part in a modality. */
const CACHE_PARTS = [
  ['cache_read_tokens', 'read'],
  ['cache_write_tokens', 'write'],
  ['cache_write_1h_tokens', 'write_1h'],
] as const

/**
 * The library's usage with the parts a meter split out (`Usage.extra`), or null when there are
 * none. A cached part of a modality the meter did not report (Gemini's `cacheTokensDetails` names
 * only what is cached: a text-only cache hit beside an audio prompt has no AUDIO entry) is 0: the
 * cache holds the prompt's text, as far as the text goes (beyond it, the rest is the one modality
 * left). The library requires the count once both the cache count and the modality's count are
 * positive (it cannot tell how much of each is the other), and refused such a call outright,
 * which priced all of the audio at the text rate (2.9x less for Gemini 2.5 Flash).
 */
export function withExtra(base: Record<string, number>, u: Usage): Record<string, number> | null {
  if (!u.extra) return null
  let any = false
  const out = { ...base }
  for (const [k, v] of Object.entries(u.extra)) {
    if (v > 0) {
      out[k] = v
      any = true
    }
  }
  if (!any) return null
  for (const [cache, part] of CACHE_PARTS) {
    if (!(out[cache] > 0)) continue
    // The prompt's text (what no modality count claims), and the cached tokens no modality's
    // cached count claims: what of those the text cannot hold is the unnamed modality's, when
    // only one is unnamed (else the library refuses the split, and `listPrice` says so).
    let text = out.input_tokens
    let unclaimed = out[cache]
    const unnamed: string[] = []
    for (const m of PROMPT_MODALITIES) {
      const n = out[`input_${m}_tokens`]
      if (!(n > 0)) continue
      text -= n
      const key = `cache_${m}_${part}_tokens`
      if (out[key] === undefined) unnamed.push(key)
      else unclaimed -= out[key]
    }
    for (const key of unnamed) out[key] = unnamed.length === 1 ? Math.max(0, unclaimed - Math.max(0, text)) : 0
  }
  return out
}
