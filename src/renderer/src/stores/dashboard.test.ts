// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import { fakeServer, flush } from '../testing/fake-server'
import { dashboardRoutes, summary } from '../testing/sample'
import { useDashboard } from './dashboard'
import { useFilters } from './filters'

beforeEach(() => {
  window.history.replaceState(null, '', '/?range=7d&tenant=acme')
  setActivePinia(createPinia())
})
afterEach(() => {
  useDashboard().stop()
  vi.unstubAllGlobals()
})

describe('dashboard store', () => {
  it('loads every view with the range and tenant from the URL', async () => {
    const server = fakeServer(dashboardRoutes())
    const dash = useDashboard()
    await dash.refresh()
    expect(dash.data.summary?.today_spend_usd).toBe(12.344)
    expect(dash.data.timeseries?.range).toBe('7d')
    expect(dash.data.costs?.group_by).toBe('model')
    expect(dash.data.providers?.group_by).toBe('provider')
    expect(dash.data.keys?.group_by).toBe('api_key')
    expect(dash.data.members?.group_by).toBe('member')
    expect(dash.unreachable).toBe(false)
    expect(dash.lastUpdated).not.toBeNull()
    const paths = server.calls.map((c) => c.path).sort()
    expect(paths).toEqual([
      '/api/dashboard/alerts',
      '/api/dashboard/budgets',
      '/api/dashboard/costs',
      '/api/dashboard/costs',
      '/api/dashboard/costs',
      '/api/dashboard/costs',
      '/api/dashboard/expensive',
      '/api/dashboard/sessions',
      '/api/dashboard/stats',
      '/api/dashboard/summary',
      '/api/dashboard/timeseries',
    ])
    for (const c of server.calls.filter((c) => !c.path.endsWith('alerts'))) expect(c.query.get('tenant')).toBe('acme')
    for (const c of server.calls.filter((c) => !/summary|sessions|budgets|alerts/.test(c.path))) expect(c.query.get('range')).toBe('7d')
    expect(server.calls.find((c) => c.path.endsWith('expensive'))?.query.get('limit')).toBe('10')
  })

  it('refetches when a filter changes and drops answers to the old filters', async () => {
    let release: () => void = () => {}
    const slow = new Promise<void>((r) => (release = r))
    const routes = dashboardRoutes()
    const server = fakeServer({
      ...routes,
      // The first summary answer (tenant acme) arrives after the filter changed.
      'GET /api/dashboard/summary': async (r) => {
        if (r.query.get('tenant') === 'acme') {
          await slow
          return { body: summary({ today_spend_usd: 999 }) }
        }
        return { body: summary({ today_spend_usd: 1 }) }
      },
    })
    const dash = useDashboard()
    const filters = useFilters()
    const first = dash.refresh()
    filters.setTenant('globex')
    await nextTick()
    await vi.waitFor(() => expect(dash.data.summary?.today_spend_usd).toBe(1))
    release()
    await first
    await flush()
    expect(dash.data.summary?.today_spend_usd).toBe(1)
    expect(server.calls.some((c) => c.query.get('tenant') === 'globex')).toBe(true)
  })

  it('sends the member filter with the breakdown, and keeps it in the URL', async () => {
    const server = fakeServer(dashboardRoutes())
    const dash = useDashboard()
    const filters = useFilters()
    filters.setMember('alice')
    await nextTick()
    await dash.refresh()
    const costs = server.calls.filter((c) => c.path.endsWith('/costs'))
    const byGroup = Object.fromEntries(costs.map((c) => [c.query.get('group_by'), c.query.get('member')]))
    // Only the breakdown is one member's; the member list itself is every member's.
    expect(byGroup).toEqual({ model: 'alice', provider: null, api_key: null, member: null })
    expect(window.location.search).toContain('member=alice')
  })

  it('keeps the last figures and says the server is unreachable, then recovers', async () => {
    const server = fakeServer(dashboardRoutes())
    const dash = useDashboard()
    await dash.refresh()
    server.setDown(true)
    await dash.refresh()
    expect(dash.unreachable).toBe(true)
    expect(dash.data.summary?.today_spend_usd).toBe(12.344)
    server.setDown(false)
    await dash.refresh()
    expect(dash.unreachable).toBe(false)
  })

  it('shows an API error on its own view without hiding the others', async () => {
    fakeServer({
      ...dashboardRoutes(),
      'GET /api/dashboard/stats': () => ({ status: 400, body: { error: { type: 'invalid_request', message: 'range must be one of 30m, 1h.' } } }),
    })
    const dash = useDashboard()
    await dash.refresh()
    expect(dash.errors.stats).toBe('range must be one of 30m, 1h.')
    expect(dash.errors.summary).toBeUndefined()
    expect(dash.unreachable).toBe(false)
    expect(dash.isLoaded('stats')).toBe(true)
  })

  it('polls on its own', async () => {
    vi.useFakeTimers()
    try {
      const server = fakeServer(dashboardRoutes())
      const dash = useDashboard()
      dash.start(1000)
      await vi.advanceTimersByTimeAsync(10)
      const after1 = server.calls.length
      expect(after1).toBe(11)
      await vi.advanceTimersByTimeAsync(1000)
      expect(server.calls.length).toBe(22)
      dash.stop()
      await vi.advanceTimersByTimeAsync(5000)
      expect(server.calls.length).toBe(22)
    } finally {
      vi.useRealTimers()
    }
  })

  it('says the dashboard is empty only when nothing was recorded', async () => {
    fakeServer({
      ...dashboardRoutes(),
      'GET /api/dashboard/summary': () => ({ body: summary({ today_spend_usd: 0, month_spend_usd: 0, today_requests: 0 }) }),
      'GET /api/dashboard/costs': (r) => ({ body: { group_by: r.query.get('group_by'), range: '24h', rows: [] } }),
      'GET /api/dashboard/sessions': () => ({ body: { sessions: [] } }),
    })
    const dash = useDashboard()
    await dash.refresh()
    expect(dash.empty).toBe(true)
  })

  it('is not empty when the ledger holds calls the month spend does not show: plan usage, earlier calls', async () => {
    const row = { key: 'anthropic', provider: null, requests: 40, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0 }
    let month = summary({ today_spend_usd: 0, month_spend_usd: 0, today_requests: 0, month_plan_value_usd: 12 })
    let last30: unknown[] = []
    const server = fakeServer({
      ...dashboardRoutes(),
      'GET /api/dashboard/summary': () => ({ body: month }),
      'GET /api/dashboard/costs': (r) => ({
        body: { group_by: r.query.get('group_by'), range: r.query.get('range'), rows: r.query.get('range') === '30d' ? last30 : [], total_rows: r.query.get('range') === '30d' ? last30.length : 0 },
      }),
      'GET /api/dashboard/sessions': () => ({ body: { sessions: [] } }),
    })
    const dash = useDashboard()
    // A Claude-plan user who last worked two days ago: $0 spent, $12 of plan usage this month.
    await dash.refresh()
    expect(dash.empty).toBe(false)
    // The 2nd of a month after a day off: nothing this month, last month's calls in the last 30 days.
    month = summary({ today_spend_usd: 0, month_spend_usd: 0, today_requests: 0 })
    last30 = [row]
    await dash.refresh()
    expect(dash.empty).toBe(false)
    expect(server.calls.at(-1)?.query.get('range')).toBe('30d')
    // Truly nothing.
    last30 = []
    await dash.refresh()
    expect(dash.empty).toBe(true)
  })
})

describe('dashboard token', () => {
  it('says how to give the token when the dashboard API answers 401, once, not per view', async () => {
    const msg = 'The dashboard needs its token: open /?token=<dashboard.token> once in this browser.'
    const routes = Object.fromEntries(
      Object.keys(dashboardRoutes()).map((k) => [k, () => ({ status: 401, body: { error: { type: 'unauthorized', message: msg } } })]),
    )
    fakeServer(routes)
    const dash = useDashboard()
    await dash.refresh()
    expect(dash.authMessage).toBe(msg)
    expect(Object.keys(dash.errors)).toEqual([])
    expect(dash.unreachable).toBe(false)
  })

  it('stops showing figures as current once its session is gone (a restart), and back once it is given', async () => {
    const msg = 'The dashboard needs its token: open /?token=<dashboard.token> once in this browser.'
    let lost = false
    const routes = Object.fromEntries(
      Object.entries(dashboardRoutes()).map(([k, route]) => [k, (r: any) => (lost ? { status: 401, body: { error: { type: 'unauthorized', message: msg } } } : route(r))]),
    )
    fakeServer(routes)
    const dash = useDashboard()
    await dash.refresh()
    expect(dash.current('summary')?.today_spend_usd).toBe(12.344)
    const updated = dash.lastUpdated
    lost = true
    await new Promise((r) => setTimeout(r, 5))
    await dash.refresh()
    expect(dash.authMessage).toBe(msg)
    // No section's figures pass for current, and the round is not an update ("Live · updated just now").
    for (const s of ['summary', 'timeseries', 'costs', 'keys', 'sessions', 'budgets'] as const) expect(dash.current(s)).toBeNull()
    expect(dash.lastUpdated).toBe(updated)
    expect(dash.empty).toBe(false)
    lost = false
    await dash.refresh()
    expect(dash.authMessage).toBe('')
    expect(dash.current('summary')?.today_spend_usd).toBe(12.344)
  })
})
