import { isObject, type Usage } from '../metering/usage'

/**
 * Grounding with Google Search on a Gemini call, as its answer tells it: each answer's
 * `candidates[].groundingMetadata` (Gemini API, Vertex AI, Gemini Code Assist's `response`) names
 * the queries the model ran (`webSearchQueries`) and the Google Search suggestions it must show
 * (`searchEntryPoint`); its web sources (`groundingChunks[].web`) are no sign of a search, as the
 * URL context tool names the pages it fetched there too. Google bills Gemini 3 models per search
 * query and counts each distinct one once, ignoring empty ones ("For billing purposes, we ignore the empty web search queries when
 * counting unique queries": ai.google.dev/gemini-api/docs/google-search, as quoted at
 * discuss.ai.google.dev/t/168136), and Gemini 2.5 and older per grounded prompt. A stream repeats
 * the metadata (an empty `groundingMetadata: {}` on every chunk, the whole of it on the last), so
 * queries are kept as a set: a query seen again is not counted again. The counts go on the
 * call's usage (`Usage.google_search_queries`, `google_search_grounded`), priced as
 * ../pricing/search-grounding.ts says.
 */

/** Distinct queries kept at most: a model runs a handful; a hostile answer cannot grow the set past this. */
const MAX_QUERIES = 1000
const NOT_BLANK = /\S/

export class SearchGrounding {
  private readonly queries = new Set<string>()
  private grounded = false

  /** One candidate's `groundingMetadata`. */
  take(gm: Record<string, unknown>): void {
    const q = gm.webSearchQueries
    if (Array.isArray(q)) {
      for (const s of q) if (typeof s === 'string' && this.queries.size < MAX_QUERIES && NOT_BLANK.test(s)) this.queries.add(s)
    }
    // Web sources alone are no search: URL context names the pages it fetched as `groundingChunks[].web` too.
    if (!this.grounded && (this.queries.size > 0 || isObject(gm.searchEntryPoint))) this.grounded = true
  }

  /** The counts as a usage carries them; undefined when the answers were not grounded by Google Search. */
  usage(): Pick<Usage, 'google_search_queries' | 'google_search_grounded'> | undefined {
    if (!this.grounded) return undefined
    return this.queries.size > 0 ? { google_search_queries: this.queries.size, google_search_grounded: true } : { google_search_grounded: true }
  }
}

/** The Google Search tools of a Gemini request (`tools[]`): the current one and the Gemini 1.5 era's retrieval tool, in either spelling. */
const SEARCH_TOOLS = ['googleSearch', 'google_search', 'googleSearchRetrieval', 'google_search_retrieval'] as const

/** Whether a Gemini request's `tools` (Gemini Code Assist: `request.tools`) ask for Grounding with Google Search. */
export function requestsGoogleSearch(body: unknown): boolean {
  if (!isObject(body)) return false
  const tools = Array.isArray(body.tools) ? body.tools : isObject(body.request) && Array.isArray(body.request.tools) ? body.request.tools : null
  if (!tools) return false
  for (const t of tools) {
    if (!isObject(t)) continue
    for (const k of SEARCH_TOOLS) if (t[k] !== undefined && t[k] !== null) return true
  }
  return false
}
