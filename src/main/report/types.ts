/** The report's kinds, query and answer (`burnrate report`, `GET /api/dashboard/report`). */

/** The report kinds of `burnrate report` and `GET /api/dashboard/report`. */
export const REPORT_KINDS = ['daily', 'weekly', 'monthly', 'session', 'model', 'agent', 'project'] as const
export type ReportKind = (typeof REPORT_KINDS)[number]

/** The kinds whose rows are attributes, listed costliest first (and cut by `limit`). */
export const RANKED_KINDS: readonly ReportKind[] = ['session', 'model', 'agent', 'project']

/** Rows of a ranked report when no `limit` is given, and the most a `limit` may ask for. */
export const REPORT_LIMIT = { default: 100, max: 1_000_000 } as const

export interface ReportRow {
  /** `2026-11-20` (daily; weekly: the Monday), `2026-11` (monthly), or the session, model, agent or project. */
  key: string
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
  /** Calls imported from the agents' logs (the rest came through the proxy). */
  imported: number
  /**
   * Calls of no known price (recorded at $0, `priced: false`; plan usage too, whose API-equivalent
   * value is then unknown), counted as $0 in `cost_usd`, which is then a lower bound. Counted from
   * the calls retention keeps (a day's older calls pruned, its rollup row has none to count).
   */
  unpriced_requests: number
  /** Models used, costliest first. */
  models: string[]
  /** model: its provider; session: its agent and project. */
  provider?: string
  agent?: string
  project?: string
}

export interface Report {
  kind: ReportKind
  /** The window, ISO times; `until` is exclusive. Null when open. */
  since: string | null
  until: string | null
  timezone: string
  tenant: string | null
  rows: ReportRow[]
  /** How many rows the window has in all (`rows` holds the costliest `limit` of them). */
  total_rows: number
  /** Of every row of the window, those left out too. */
  totals: Omit<ReportRow, 'key' | 'models' | 'provider' | 'agent' | 'project'>
}

export interface ReportQuery {
  kind: ReportKind
  since: number | null
  until: number | null
  tenant: string | null
  timezone: string
  /** A session, model, agent or project report lists at most this many rows, costliest first; null or absent: every row. */
  limit?: number | null
}
