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
  | 'loop_detected'
  | 'rate_limited'
  | 'service_unavailable'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'method_not_allowed'
  | 'internal'

export interface ApiErrorBody {
  error: { type: ErrorType; message: string; [extra: string]: unknown }
}

export type Range = '30m' | '1h' | '6h' | '24h' | '7d' | '30d'
export const RANGES: readonly Range[] = ['30m', '1h', '6h', '24h', '7d', '30d']

export type GroupBy = 'model' | 'provider' | 'agent' | 'session' | 'api_key' | 'tenant' | 'project' | 'member'
export const GROUP_BYS: readonly GroupBy[] = ['model', 'provider', 'agent', 'session', 'api_key', 'tenant', 'project', 'member']

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

/**
 * `POST /api/ingest` (team server; README: Reporting to a team server): a batch of calls another
 * Burnrate recorded. Each is a `Call` (contract fields; `member` empty or the token's member),
 * optionally with `key_hint`, `endpoint` and `error` as that Burnrate recorded them.
 */
export interface IngestRequest {
  calls: IngestCall[]
}
/**
 * A call as a member sends it. `revision` (a whole number >= 1) is set once the call's cost or
 * tokens changed after it was recorded (re-priced, or a background response's real usage): the team
 * server then replaces what it holds for the call when this revision is newer (README: Team).
 */
export type IngestCall = Call & { key_hint?: string; endpoint?: string; error?: string | null; revision?: number; superseded_by?: number }

/** Calls per ingest request at most (a larger batch is a 400). */
export const INGEST_MAX_CALLS = 1000

/** A call of the batch that was refused (the others are stored): its index, its id, and why. */
export interface IngestRejection {
  index: number
  id: unknown
  error: { type: 'invalid_request'; message: string; param: string }
}

export interface IngestResult {
  /** Calls stored now. */
  accepted: number
  /** Calls this member had sent before (same id, and no newer revision): not stored again. */
  duplicates: number
  /** Calls stored before whose newer revision (cost, tokens) replaced what was held. */
  revised: number
  /** Calls refused for what they hold (never stored; sending them again does not help). */
  rejected: IngestRejection[]
}

/** `team` in `GET /api/health` of a Burnrate with `team.url` (README: Reporting to a team server). */
export interface TeamHealth {
  /** The team server's address (without any credentials). */
  url: string
  /** Calls recorded here and not yet acknowledged by the team server. */
  backlog: number
  /** Calls the team server acknowledged since this Burnrate started (accepted or duplicates). */
  sent: number
  /** Calls the team server refused as invalid since start (skipped; see last_error). */
  rejected: number
  last_sent_at: string | null
  last_error: string | null
  /** When the next attempt is due while retrying, else null. */
  retry_at: string | null
}

export interface Health {
  status: 'ok' | 'degraded'
  version: string
  uptime_s: number
  /** The OTLP export's state; null when `otel.endpoint` is not set. */
  otel?: OtelHealth | null
  prices?: PricesHealth
  [extra: string]: unknown
}

/** `prices` in `GET /api/health` (README: HTTP API). */
export interface PricesHealth {
  /** The price data is loaded: calls are metered without waiting (false a moment after start-up). */
  ready: boolean
  /** Why the last attempt to load it failed (proxied calls are refused; `status` is `degraded`), else null. */
  last_error: string | null
}

/** `otel` in `GET /api/health` (README: OpenTelemetry). */
export interface OtelHealth {
  endpoint: string
  /** Calls waiting to be exported as spans. */
  queued: number
  exported_spans: number
  /** Calls never exported as spans: the queue was full (collector slow or down), or their export failed. */
  dropped_spans: number
  metric_exports: number
  failed_metric_exports: number
  last_error: string | null
}

export type BudgetAction = 'block' | 'warn'

/** How a call in flight is reserved against a `block` rule (README: Budgets). */
export type ReserveMode = 'expected' | 'max_tokens'

/** The optional second-wave rule fields (contract: Additions for the second wave). */
export interface BudgetRuleOptions {
  weekly_limit_usd: number | null
  window_hours: number | null
  window_limit_usd: number | null
  session_limit_usd: number | null
  model_pattern: string | null
  provider: string | null
  agent: string | null
  tenant: string | null
  requests_per_minute: number | null
  tokens_per_minute: number | null
  /** Fractions of a limit (0, 1] at which an alert fires once per window; null for the default. */
  alert_at_pct: number[] | null
  reserve: ReserveMode
}

export const RULE_OPTION_FIELDS: readonly (keyof BudgetRuleOptions)[] = [
  'weekly_limit_usd', 'window_hours', 'window_limit_usd', 'session_limit_usd', 'model_pattern', 'provider',
  'agent', 'tenant', 'requests_per_minute', 'tokens_per_minute', 'alert_at_pct', 'reserve',
]

/** Every second-wave field at its default (what a rule that names none of them has). */
export const DEFAULT_RULE_OPTIONS: Readonly<BudgetRuleOptions> = {
  weekly_limit_usd: null, window_hours: null, window_limit_usd: null, session_limit_usd: null,
  model_pattern: null, provider: null, agent: null, tenant: null,
  requests_per_minute: null, tokens_per_minute: null, alert_at_pct: null, reserve: 'expected',
}

export interface BudgetRuleInput extends Partial<BudgetRuleOptions> {
  api_key_pattern: string
  daily_limit_usd?: number | null
  monthly_limit_usd?: number | null
  action: BudgetAction
  soft_limit_pct?: number | null
}

export interface BudgetRule extends BudgetRuleOptions {
  api_key_pattern: string
  daily_limit_usd: number | null
  monthly_limit_usd: number | null
  action: BudgetAction
  soft_limit_pct: number | null
  source: 'runtime' | 'config'
  overridden: boolean
  created_at: string | null
}

/** A limit a refusal or a budget window is about. */
export type BudgetPeriod = 'daily' | 'weekly' | 'monthly' | 'window' | 'session' | 'rate'

export interface BudgetExceededError {
  error: {
    type: 'budget_exceeded'
    message: string
    api_key_pattern: string
    period: BudgetPeriod
    limit_usd: number
    spent_usd: number
    /** Null for a session cap (a session's spend never resets). */
    resets_at: string | null
  }
}

/** One window of one rule for one API key in `GET /api/dashboard/budgets`. */
export interface BudgetWindow {
  period: Exclude<BudgetPeriod, 'rate'>
  limit_usd: number
  spent_usd: number
  pct: number
  projected_usd: number
  exhausted_at: string | null
  /** Null for a session: a session's limit never resets (as in a refusal). */
  resets_at: string | null
  /** The pace the forecast assumes, in USD per hour (0 for a session, which is not forecast). */
  burn_rate_usd_per_hour: number
  /**
   * Only for `period: 'session'`: the key's session of the last 24 hours that spent most under the
   * rule (the one nearest the limit); when none spent money, the one with most calls of no known
   * price in the rule's scope (at $0, with its `unpriced_requests`); null when it had none.
   */
  session?: string | null
  /**
   * The key's calls the rule counts in this window (its scope; the session's, for a session) billed
   * per token whose model has no known price: counted as $0, so `spent_usd`, `pct` and the forecast
   * are then lower bounds (README: Unpriced calls in the spend figures).
   */
  unpriced_requests: number
}

export interface BudgetStatus {
  rule: BudgetRule
  /** The API key this spend belongs to (limits apply per key); null for a rule no key has used yet. */
  api_key_hash: string | null
  key_hint: string | null
  windows: BudgetWindow[]
}

export interface BudgetsOverview {
  rules: BudgetStatus[]
  /** All spend (every key), with a forecast for today and this month; empty when filtered by tenant. */
  overall: {
    period: 'daily' | 'monthly'
    spent_usd: number
    projected_usd: number
    resets_at: string
    burn_rate_usd_per_hour: number
    /** Calls of the day (month) billed per token whose model has no known price, counted as $0: as the summary's `today_unpriced_requests` (`month_…`). */
    unpriced_requests: number
  }[]
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
  /** Money: calls billed per token. Subscription calls are not in it (see the plan value fields). */
  today_spend_usd: number
  month_spend_usd: number
  /** API-equivalent value of subscription calls (a plan's OAuth credential): what they would have cost per token. */
  today_plan_value_usd: number
  month_plan_value_usd: number
  today_requests: number
  /** Of `today_requests`, the calls billed per token: every one but a subscription plan's (whose money is 0). */
  today_billed_requests: number
  /**
   * Today's spend over `today_billed_requests` (0 when none): what a call billed per token cost on
   * average. A plan's call costs no money and is not counted; one of no known price counts as $0.
   */
  avg_cost_per_request_usd: number
  active_sessions: number
  error_rate: number
  /** The IANA zone in which today and this month begin (the config's `timezone`), which the browser's need not be. */
  timezone: string
  /**
   * Calls today (this month) billed per token whose model has no known price: counted as $0 in
   * `today_spend_usd` (`month_spend_usd`), which is then a lower bound (README: Unpriced calls in the spend figures).
   */
  today_unpriced_requests: number
  month_unpriced_requests: number
}

export interface TimeseriesPoint {
  t: string
  cost_usd: number
  requests: number
  input_tokens: number
  output_tokens: number
  /** Of `requests`, the calls billed per token whose model has no known price: counted as $0 in `cost_usd`. */
  unpriced_requests: number
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
  /** Of `requests`, the calls billed per token whose model has no known price: counted as $0 in `cost_usd`. */
  unpriced_requests: number
  /** With `group_by=api_key`: the key's hint (`sk-…9f3a`), as the key itself is shown only hashed. */
  key_hint?: string
  /** True on the one row (last, key `(other)`) that sums every group past `limit`. */
  other?: boolean
}

/** Most rows a dashboard list returns by default, and at most (`limit`). */
export const LIST_LIMIT_DEFAULT = 100
export const LIST_LIMIT_MAX = 1000

export interface Costs {
  group_by: GroupBy
  range: Range
  /** The costliest `limit` groups, then (when there are more) one `other` row summing the rest: the rows always add up to the spend. */
  rows: CostRow[]
  /** How many groups there are in all. */
  total_rows: number
}

export interface SessionRow {
  session: string
  agent: string
  tenant: string
  started_at: string
  last_seen_at: string
  requests: number
  cost_usd: number
  /** Of `requests`, the calls billed per token whose model has no known price: counted as $0 in `cost_usd` (of the calls retention keeps). */
  unpriced_requests: number
  /**
   * Of `requests`, the calls `ledger.retention_days` pruned (a team server's ingested calls older
   * than it; a session resumed after a week idle): whether they had a price is no longer known, and
   * `unpriced_requests` does not count them. 0 while every call of the session is kept.
   */
  pruned_requests: number
  status: 'active' | 'idle'
}

export interface Sessions {
  /** The `limit` most recent sessions. */
  sessions: SessionRow[]
  /** How many sessions there are in all (in the last 24 h). */
  total: number
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
  /** Of `total_requests`, the calls billed per token: every one but a subscription plan's (whose money is 0). */
  billed_requests: number
  /** The range's spend over `billed_requests` (0 when none); a plan's call is not counted, one of no known price counts as $0. */
  avg_cost_per_request_usd: number
}

export interface ExportJson {
  calls: Call[]
}

/** One alert sent to one webhook (`GET /api/dashboard/alerts`, README: Alerts). */
export interface AlertDelivery {
  id: string
  event_id: string
  type: 'budget.threshold' | 'runaway.loop' | 'runaway.spend_rate' | 'test'
  /** The webhook's origin only: its path may be a secret. */
  url: string
  format: 'json' | 'slack'
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  last_status: number | null
  last_error: string | null
  created_at: string
  updated_at: string
}

export interface AlertsLog {
  /** How many webhooks are configured. */
  webhooks: number
  /** The most recent deliveries (up to 200), newest first. */
  deliveries: AlertDelivery[]
  /** Runaway agents detected (loops, session spend rate), the last 200, newest first. */
  runaway: RunawayMark[]
}

export interface RunawayMark {
  kind: 'loop' | 'spend_rate'
  action: 'warn' | 'block'
  session: string
  agent: string
  model: string
  key_hint: string
  /** loop: times the same tail was seen in the window. */
  repeats: number
  usd_last_minute: number
  at: string
}

/** GET /api/dashboard/unpriced: models whose calls were recorded without a price. */
export interface UnpricedModel {
  provider: string
  model: string
  requests: number
  input_tokens: number
  output_tokens: number
  first_seen_at: string
  last_seen_at: string
}

export interface Unpriced {
  models: UnpricedModel[]
}

/** Body of PUT /api/admin/prices/{provider}/{model}: USD per million tokens. */
export interface PriceInput {
  input_mtok: number
  output_mtok: number
  cache_read_mtok?: number | null
  cache_write_mtok?: number | null
}

/** A runtime price as the admin API stores and returns it. */
export interface StoredPrice {
  provider: string
  model: string
  input_mtok: number
  output_mtok: number
  cache_read_mtok: number | null
  cache_write_mtok: number | null
  updated_at: string
}

/** POST /api/admin/prices/{provider}/{model}/reprice. */
export interface RepriceResult {
  provider: string
  model: string
  repriced: number
  unpriced: number
  cost_usd_before: number
  cost_usd_after: number
}

/** GET /api/dashboard/prices: where the price data in use came from. */
export interface PriceData {
  source: 'bundled' | 'cached' | 'updated'
  updated_at: string | null
  checked_at: string | null
  last_error: string | null
  auto_update: boolean
  url: string
}

/** One usage window of a plan, as the vendor's own response headers report it. */
export interface PlanWindow {
  /** `5h`, `7d`, `7d_opus`, `7d_sonnet`… for Anthropic; `5h`/`7d` (from the window length) or `primary`/`secondary` for Codex; `requests`, `tokens`… for per-key limits. */
  name: string
  /** 0..1; 0 once `resets_at` has passed with no reading since (with status '' and no pace). */
  utilization: number
  resets_at: string | null
  /** The vendor's word for the window (`allowed`, `allowed_warning`, `rejected`), or '' when it sends none. */
  status: string
  /** When the window runs out at the pace of its recent history (never a time already passed); null when it will not before it resets (or no pace yet). */
  projected_exhausted_at: string | null
  /** Utilization the window will have when it resets, at that pace (null without a pace). */
  projected_at_reset: number | null
  /** Window length in minutes, when known. */
  window_minutes: number | null
}

export interface PlanAccount {
  provider: string
  /** Which credential (`sk-…9f3a`-style hint of the key or token). */
  account_hint: string
  /**
   * The account's own id (16 hex characters, a hash of what names it, never the credential): stays
   * the same across readings and restarts, and tells apart accounts whose hints are the same (one
   * ChatGPT token in two workspaces, short keys all `…`).
   */
  account_id: string
  billing: CallBilling
  updated_at: string
  windows: PlanWindow[]
  /** Account-wide fields the vendor sent (status, representative claim, overage, credits…), including ones Burnrate does not know yet. */
  details: Record<string, string>
}

export interface Plans {
  accounts: PlanAccount[]
}
