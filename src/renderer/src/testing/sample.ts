import type { Call, Costs, Sessions, Stats, Summary, Timeseries } from '../../../shared/api'

export const summary = (over: Partial<Summary> = {}): Summary => ({
  today_spend_usd: 12.344,
  month_spend_usd: 1234.5,
  today_plan_value_usd: 0,
  month_plan_value_usd: 0,
  today_requests: 1520,
  avg_cost_per_request_usd: 0.0081210526,
  active_sessions: 3,
  error_rate: 0.0123,
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
  })),
})

export const costs = (group_by: Costs['group_by'] = 'model', range = '24h'): Costs => ({
  group_by,
  range: range as Costs['range'],
  rows: [
    { key: 'claude-sonnet-4-5', provider: group_by === 'model' ? 'anthropic' : null, requests: 10, input_tokens: 50_000, output_tokens: 2_000, cache_read_tokens: 40_000, cache_write_tokens: 1_000, cost_usd: 1.5 },
    { key: 'gpt-4o-mini', provider: group_by === 'model' ? 'openai' : null, requests: 40, input_tokens: 9_000, output_tokens: 3_000, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0.0042 },
    { key: '<b>bold</b>', provider: group_by === 'model' ? 'openai' : null, requests: 1, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0.25 },
  ],
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
    { session: 's-1', agent: 'codex', tenant: 'acme', started_at: '2026-11-21T17:00:00.000Z', last_seen_at: '2026-11-21T18:04:00.000Z', requests: 12, cost_usd: 0.5, status: 'active' },
  ],
})

export const stats = (): Stats => ({
  total_requests: 100,
  errors_429: 3,
  errors_5xx: 2,
  error_rate: 0.05,
  avg_latency_ms: 1234,
  p50_latency_ms: 800,
  p95_latency_ms: 4200,
  avg_cost_per_request_usd: 0.01,
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
  }
}
