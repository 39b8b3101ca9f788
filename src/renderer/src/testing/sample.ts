import { type AlertsLog, type BudgetsOverview, type Call, type Costs, DEFAULT_RULE_OPTIONS, type Sessions, type Stats, type Summary, type Timeseries } from '../../../shared/api'

export const summary = (over: Partial<Summary> = {}): Summary => ({
  today_spend_usd: 12.344,
  month_spend_usd: 1234.5,
  today_plan_value_usd: 0,
  month_plan_value_usd: 0,
  today_requests: 1520,
  today_billed_requests: 1520,
  avg_cost_per_request_usd: 0.0081210526,
  active_sessions: 3,
  error_rate: 0.0123,
  timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  today_unpriced_requests: 0,
  month_unpriced_requests: 0,
  ...over,
})

export const timeseries = (range = '24h'): Timeseries => ({
  range: range as Timeseries['range'],
  bucket_seconds: 300,
  points: Array.from({ length: 30 }, (_, i) => ({
    t: new Date(Date.UTC(2026, 10, 21, 12, i * 5)).toISOString(),
    cost_usd: i * 0.001,
    requests: i,
    input_tokens: i * 100,
    output_tokens: i * 10,
    unpriced_requests: 0,
  })),
})

export const costs = (group_by: Costs['group_by'] = 'model', range = '24h'): Costs => ({
  group_by,
  range: range as Costs['range'],
  rows: [
    { key: 'claude-sonnet-4-5', provider: group_by === 'model' ? 'anthropic' : null, requests: 10, input_tokens: 50_000, output_tokens: 2_000, cache_read_tokens: 40_000, cache_write_tokens: 1_000, cost_usd: 1.5, unpriced_requests: 0 },
    { key: 'gpt-4o-mini', provider: group_by === 'model' ? 'openai' : null, requests: 40, input_tokens: 9_000, output_tokens: 3_000, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0.0042, unpriced_requests: 0 },
    { key: '<b>bold</b>', provider: group_by === 'model' ? 'openai' : null, requests: 1, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0.25, unpriced_requests: 0 },
  ],
  total_rows: 3,
})

export const call = (over: Partial<Call> = {}): Call => ({
  id: 1,
  t: '2026-11-21T18:04:05.123Z',
  provider: 'openai',
  model: 'gpt-4o-mini',
  api_key_hash: 'a'.repeat(64),
  tenant: 'acme',
  agent: 'codex',
  session: 's-1',
  status: 200,
  streamed: false,
  input_tokens: 1149,
  output_tokens: 353,
  cache_read_tokens: 1024,
  cache_write_tokens: 0,
  reasoning_tokens: 0,
  cost_usd: 0.00030675,
  priced: true,
  estimated: false,
  latency_ms: 842,
  response_id: 'chatcmpl-1',
  source: 'proxy',
  billing: 'api',
  project: '',
  member: '',
  ...over,
})

export const sessions = (): Sessions => ({
  sessions: [
    { session: 's-1', agent: 'codex', tenant: 'acme', started_at: '2026-11-21T17:00:00.000Z', last_seen_at: '2026-11-21T18:04:00.000Z', requests: 12, cost_usd: 0.5, unpriced_requests: 0, pruned_requests: 0, status: 'active' },
  ],
  total: 1,
})

export const stats = (): Stats => ({
  total_requests: 100,
  errors_429: 3,
  errors_5xx: 2,
  error_rate: 0.05,
  avg_latency_ms: 1234,
  p50_latency_ms: 800,
  p95_latency_ms: 4200,
  billed_requests: 100,
  avg_cost_per_request_usd: 0.01,
})

export const budgets = (): BudgetsOverview => ({
  rules: [
    {
      rule: {
        ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-dev-*', daily_limit_usd: 5, monthly_limit_usd: null, action: 'block',
        soft_limit_pct: null, source: 'config', overridden: false, created_at: null, window_hours: 5, window_limit_usd: 2,
      },
      api_key_hash: 'a'.repeat(64),
      key_hint: 'sk-…0001',
      windows: [
        { period: 'daily', limit_usd: 5, spent_usd: 4.5, pct: 0.9, projected_usd: 7.5, exhausted_at: '2026-11-21T20:00:00.000Z', resets_at: '2026-11-22T00:00:00.000Z', burn_rate_usd_per_hour: 0.25, unpriced_requests: 0 },
        { period: 'window', limit_usd: 2, spent_usd: 0.5, pct: 0.25, projected_usd: 0.5, exhausted_at: null, resets_at: '2026-11-21T22:00:00.000Z', burn_rate_usd_per_hour: 0.1, unpriced_requests: 0 },
      ],
    },
  ],
  overall: [
    { period: 'daily', spent_usd: 6, projected_usd: 9, resets_at: '2026-11-22T00:00:00.000Z', burn_rate_usd_per_hour: 0.3, unpriced_requests: 0 },
    { period: 'monthly', spent_usd: 80, projected_usd: 120, resets_at: '2026-12-01T00:00:00.000Z', burn_rate_usd_per_hour: 0.2, unpriced_requests: 0 },
  ],
})

export const alertsLog = (): AlertsLog => ({
  webhooks: 1,
  runaway: [
    { kind: 'loop', action: 'warn', session: 's-loop', agent: 'claude-code', model: 'claude-sonnet-4-5', key_hint: 'sk-…0001', repeats: 5, usd_last_minute: 0, at: '2026-11-21T18:02:00.000Z' },
  ],
  deliveries: [
    {
      id: 'd-2', event_id: 'alert_2', type: 'budget.threshold', url: 'https://hooks.slack.com/…', format: 'slack', status: 'failed',
      attempts: 6, last_status: 500, last_error: 'HTTP 500', created_at: '2026-11-21T18:00:00.000Z', updated_at: '2026-11-21T18:01:03.000Z',
    },
    {
      id: 'd-1', event_id: 'alert_1', type: 'budget.threshold', url: 'https://hooks.slack.com/…', format: 'slack', status: 'delivered',
      attempts: 1, last_status: 200, last_error: null, created_at: '2026-11-21T17:00:00.000Z', updated_at: '2026-11-21T17:00:00.200Z',
    },
  ],
})

/** Routes for every dashboard endpoint, echoing the parameters they were asked with. */
export function dashboardRoutes() {
  return {
    'GET /api/dashboard/summary': () => ({ body: summary() }),
    'GET /api/dashboard/timeseries': (r: { query: URLSearchParams }) => ({ body: timeseries(r.query.get('range') ?? '24h') }),
    'GET /api/dashboard/costs': (r: { query: URLSearchParams }) => ({
      body: costs((r.query.get('group_by') ?? 'model') as Costs['group_by'], r.query.get('range') ?? '30d'),
    }),
    'GET /api/dashboard/sessions': () => ({ body: sessions() }),
    'GET /api/dashboard/expensive': () => ({ body: { requests: [call()] } }),
    'GET /api/dashboard/stats': () => ({ body: stats() }),
    'GET /api/dashboard/budgets': () => ({ body: budgets() }),
    'GET /api/dashboard/alerts': () => ({ body: alertsLog() }),
  }
}
