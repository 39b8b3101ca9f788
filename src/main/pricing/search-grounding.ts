import type { Usage } from '../metering/usage'

/**
 * Grounding with Google Search on Gemini (the Gemini API, Vertex AI, Gemini Code Assist), which
 * the price data has no price for. Google's list, per project, beyond a free allowance:
 *
 * - Gemini 3 models: $14 per 1,000 search queries (each distinct non-empty query the model ran:
 *   ../providers/gemini-grounding.ts), after 5,000 free a month (ai.google.dev/gemini-api/docs/pricing,
 *   "Grounding with Google Search": 5,000 prompts per month free, then $14 / 1,000 search queries,
 *   as quoted at discuss.ai.google.dev/t/134866; ai.google.dev/gemini-api/docs/google-search:
 *   Gemini 3 "billed for each search query that the model decides to execute"). On Vertex AI, Gemini 3
 *   grounding is billed from January 5, 2026 (docs.cloud.google.com/vertex-ai/generative-ai/docs/grounding/ground-with-google-search).
 * - Gemini 2.5 and older (2.0 Flash, 1.5): $35 per 1,000 grounded prompts, however many queries
 *   a prompt ran, after 1,500 free a day, shared by Flash and Flash-Lite (the same pricing page,
 *   quoted at discuss.ai.google.dev/t/94046 and /t/102927: "Each API call using the google_search
 *   tool counts as a single billable grounding request, even if multiple search queries are performed").
 *
 * Vertex AI's pricing page (cloud.google.com/vertex-ai/generative-ai/pricing) could not be read
 * when this was written: its calls are priced at the same list, its own free allowance aside.
 * Burnrate cannot see the Google project, so it cannot know whether a call fell within the free
 * allowance. `pricing.google_search_grounding` decides:
 *
 * - `free` (default): the counts are recorded (`usage_extra`) and priced at $0, which never
 *   overstates what the call is billed; the log says once per model that the allowance decides the charge.
 * - `paid`: every query (Gemini 3) or grounded prompt (older) is priced at the list above, as a
 *   project past its allowance is billed; budgets reserve one query or grounded prompt for a
 *   request with the Google Search tool.
 *
 * The fee is a per-use charge: at list whatever batch, flex or priority tier the call ran at.
 */
export type SearchGroundingPricing = 'free' | 'paid'

export const GEMINI_SEARCH_QUERY_KCOUNT = 14
export const GEMINI_GROUNDED_PROMPT_KCOUNT = 35

/** The Gemini model generation in a model id (`gemini-3-flash-preview` 3, `gemini-2.5-pro` 2), or null. */
function geminiMajor(model: string): number | null {
  const m = /(?:^|[/-])gemini-(\d+)/.exec(model)
  return m ? Number(m[1]) : null
}

/**
 * Whether `model` is billed per grounded prompt (Gemini 2.5 and older) rather than per search
 * query. A model id that names no generation (`gemini-flash-latest`, whose answer usually names
 * the model that served it) is taken as a current one: per query.
 */
export function billedPerPrompt(model: string): boolean {
  const major = geminiMajor(model)
  return major !== null && major < 3
}

/** What a call's Google Search grounding costs at list (USD), never rounded; 0 when it ran none. */
export function searchGroundingUsd(model: string, u: Pick<Usage, 'google_search_queries' | 'google_search_grounded'>): number {
  if (billedPerPrompt(model)) return u.google_search_grounded || (u.google_search_queries ?? 0) > 0 ? GEMINI_GROUNDED_PROMPT_KCOUNT / 1000 : 0
  const n = u.google_search_queries ?? 0
  return n > 0 ? (n * GEMINI_SEARCH_QUERY_KCOUNT) / 1000 : 0
}

/** What a call's grounding is billed by, for the log: `3 search queries`, `a grounded prompt`. */
export function groundingUnits(model: string, u: Pick<Usage, 'google_search_queries' | 'google_search_grounded'>): string {
  if (billedPerPrompt(model)) return 'a grounded prompt'
  const n = u.google_search_queries ?? 0
  return n === 1 ? '1 search query' : `${n} search queries`
}
