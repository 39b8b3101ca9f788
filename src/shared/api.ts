/**
 * Types of the HTTP contract (../shared/api.md). Imported by the server (src/main)
 * and by the dashboard (src/renderer); nothing here may import Node or DOM APIs.
 */

export type ErrorType =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'budget_exceeded'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'internal'

export interface ApiErrorBody {
  error: { type: ErrorType; message: string; [extra: string]: unknown }
}

export type Range = '30m' | '1h' | '6h' | '24h' | '7d' | '30d'
export const RANGES: readonly Range[] = ['30m', '1h', '6h', '24h', '7d', '30d']

export type GroupBy = 'model' | 'provider' | 'agent' | 'session' | 'api_key' | 'tenant' | 'project'
export const GROUP_BYS: readonly GroupBy[] = ['model', 'provider', 'agent', 'session', 'api_key', 'tenant', 'project']

/** One recorded call, as the dashboard API and export show it. */
export interface Call {
  id: number
  /** ISO-8601 UTC time the call arrived. */
  t: string
  provider: string
  model: string
  api_key_hash: string
  tenant: string
  agent: string
  session: string
  status: number
  streamed: boolean
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  reasoning_tokens: number
  cost_usd: number
  priced: boolean
  estimated: boolean
  latency_ms: number
  /** The provider's id of the answer (`msg_…`, `resp_…`, `chatcmpl-…`), or empty. */
  response_id: string
  source: CallSource
  billing: CallBilling
  /** May be empty. */
  project: string
  /** Set on a team server; may be empty. */
  member: string
}

export type CallSource = 'proxy' | 'import'
export type CallBilling = 'api' | 'subscription'

/** Field order of a call in the CSV export. */
export const CALL_FIELDS: readonly (keyof Call)[] = [
  'id', 't', 'provider', 'model', 'api_key_hash', 'tenant', 'agent', 'session', 'status', 'streamed',
  'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens',
  'cost_usd', 'priced', 'estimated', 'latency_ms', 'response_id', 'source', 'billing', 'project', 'member',
]

export interface Health {
  status: 'ok' | 'degraded'
  version: string
  uptime_s: number
  [extra: string]: unknown
}

export type BudgetAction = 'block' | 'warn'

export interface BudgetRuleInput {
  api_key_pattern: string
  daily_limit_usd?: number | null
  monthly_limit_usd?: number | null
  action: BudgetAction
  soft_limit_pct?: number | null
}

export interface BudgetRule {
  api_key_pattern: string
  daily_limit_usd: number | null
  monthly_limit_usd: number | null
  action: BudgetAction
  soft_limit_pct: number | null
  source: 'runtime' | 'config'
  overridden: boolean
  created_at: string | null
}

export interface BudgetExceededError {
  error: {
    type: 'budget_exceeded'
    message: string
    api_key_pattern: string
    period: 'daily' | 'monthly'
    limit_usd: number
    spent_usd: number
    resets_at: string
  }
}

export interface ApiKeyUsage {
  api_key_hash: string
  key_hint: string
  tenant: string
  requests_month: number
  spend_today_usd: number
  spend_month_usd: number
  last_seen_at: string | null
  rule: BudgetRule | null
}

export interface ProviderStatus {
  name: string
  base_url: string
  enabled: boolean
  requests_today: number
  errors_today: number
  last_status: number | null
  last_error: string | null
  last_request_at: string | null
  avg_latency_ms: number | null
}

export interface Summary {
  today_spend_usd: number
  month_spend_usd: number
  today_requests: number
  avg_cost_per_request_usd: number
  active_sessions: number
  error_rate: number
}

export interface TimeseriesPoint {
  t: string
  cost_usd: number
  requests: number
  input_tokens: number
  output_tokens: number
}

export interface Timeseries {
  range: Range
  bucket_seconds: number
  points: TimeseriesPoint[]
}

export interface CostRow {
  key: string
  provider: string | null
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
  /** With `group_by=api_key`: the key's hint (`sk-…9f3a`), as the key itself is shown only hashed. */
  key_hint?: string
}

export interface Costs {
  group_by: GroupBy
  range: Range
  rows: CostRow[]
}

export interface SessionRow {
  session: string
  agent: string
  tenant: string
  started_at: string
  last_seen_at: string
  requests: number
  cost_usd: number
  status: 'active' | 'idle'
}

export interface Sessions {
  sessions: SessionRow[]
}

export interface Expensive {
  requests: Call[]
}

export interface Stats {
  total_requests: number
  errors_429: number
  errors_5xx: number
  error_rate: number
  avg_latency_ms: number
  p50_latency_ms: number
  p95_latency_ms: number
  avg_cost_per_request_usd: number
}

export interface ExportJson {
  calls: Call[]
}
