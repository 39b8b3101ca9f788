/** One proxied call as the ledger stores it. */
export interface CallRecord {
  /** Arrival time, ms since the epoch. */
  ts: number
  provider: string
  model: string
  endpoint: string
  api_key_hash: string
  key_hint: string
  tenant: string
  agent: string
  session: string
  status: number
  streamed: boolean
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cache_write_1h_tokens: number
  reasoning_tokens: number
  cost_usd: number
  priced: boolean
  estimated: boolean
  latency_ms: number
  /** Why the call failed on our side (`client_aborted`, `upstream_timeout`, ...), else null. */
  error: string | null
  /**
   * The model the request named, when the answer names another (a dated version: the request
   * says `claude-sonnet-4-5`, the answer `claude-sonnet-4-5-20250929`); null or absent when it is
   * the recorded `model`, when the request named none, and for calls recorded before it was kept.
   * Budget rules' `model_pattern` matches either (budgets/engine.ts `scopeMatches`).
   */
  requested_model?: string | null
  /**
   * What the call was billed for beyond the token columns, as compact JSON (metering/usage-extra.ts):
   * `{web_searches?, storage_searches?, extra?, tool_images?, provider_cost_usd?, …}`, only the keys it had. Null or
   * absent for the common call that has none of them, and for calls recorded before it was kept.
   * Re-pricing reads it back into the usage it prices (pricing/reprice.ts).
   */
  usage_extra?: string | null
  /** The provider's id of the answer (`msg_…`, `resp_…`, `chatcmpl-…`); empty when unknown. */
  response_id?: string
  /** How the call reached the ledger: through the proxy (default) or imported from an agent's logs. */
  source?: CallSource
  /** `subscription` for calls made with a plan's OAuth credential (no money per token); default `api`. */
  billing?: CallBilling
  /** The project the call was made for (e.g. the agent's working directory); empty when unknown. */
  project?: string
  /** On a team server, the member whose Burnrate sent the call; empty elsewhere. */
  member?: string
  /**
   * A unique id the writer gives the call (the PostgreSQL ledger: instance id and sequence), so
   * that writing it again after a lost COMMIT answer inserts nothing; absent in the embedded ledger.
   */
  call_key?: string
  /**
   * Shared budget state (PostgreSQL) only, never a `calls` column: the ids of the spend rows
   * (`budget_spend`, comma-separated) this call's own reservation settled its cost on, so that
   * storing the call does not add it to those rows again (budgets/state/pg/call-spend.ts). Kept
   * in memory and in the PostgreSQL ledger's spill files; absent for every other call.
   */
  budget_settled?: string
  /**
   * Shared budget state (PostgreSQL) only, never a `calls` column: the call's admission was told
   * to the other instances as it happened (their per-minute request counts took it then), so
   * the notification of its storing does not count it again (budgets/feed/admissions.ts).
   */
  rate_announced?: boolean
  /**
   * Never a column: the prompt counts are an estimate of the request's body alone (a stream cut
   * before its usage), so a stored conversation the call continued is not in them (budgets/conversations.ts).
   */
  prompt_of_body?: boolean
  /**
   * Never a column: the budget rule that refused the call, as shown (`sk-dev-*`, a whole key by
   * its hint), for the metrics' `burnrate_refusals_total{rule}`; absent when no rule refused it.
   */
  refused_rule?: string
  /**
   * Never a column: the HTTP status the client was answered with, when it is not the recorded
   * `status` (a budget or loop refusal sent to opencode, Qwen Code or Cline as the 403 they stop
   * on, recorded as the 429 it is): `burnrate_calls_total{status}` and a span's
   * `http.response.status_code` are the status the client got.
   */
  client_status?: number
}

export type CallSource = 'proxy' | 'import'
export type CallBilling = 'api' | 'subscription'

/** What an optional field of a record is when the record leaves it out. */
export const RECORD_DEFAULTS = {
  response_id: '',
  source: 'proxy',
  billing: 'api',
  project: '',
  member: '',
} as const satisfies Partial<Record<keyof CallRecord, string>>

/** Status recorded for a call the client abandoned before its response ended (nginx's convention). */
export const STATUS_CLIENT_CLOSED = 499
