// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import App from './App.vue'
import { useDashboard } from './stores/dashboard'
import { DEFAULT_RULE_OPTIONS } from '../../shared/api'
import { TOKEN_KEY } from './stores/admin'
import { err, fakeServer } from './testing/fake-server'
import { dashboardRoutes, summary } from './testing/sample'

beforeEach(() => {
  window.history.replaceState(null, '', '/')
  setActivePinia(createPinia())
})
afterEach(() => {
  useDashboard().stop()
  vi.unstubAllGlobals()
})

describe('App', () => {
  it('shows every view once the data is in', async () => {
    fakeServer(dashboardRoutes())
    const w = mount(App, { props: { origin: 'http://127.0.0.1:8787' }, attachTo: document.body })
    await vi.waitFor(() => expect(w.get('[data-testid="card-today"] .value').text()).toBe('$12.34'))
    for (const id of ['cost-over-time', 'providers', 'breakdown', 'expensive', 'sessions', 'errors', 'api-keys', 'budget-forecast', 'rules', 'alert-deliveries', 'connect']) {
      expect(w.find(`#${id}`).exists(), id).toBe(true)
    }
    expect(w.find('[data-testid="getting-started"]').exists()).toBe(false)
    expect(w.find('[data-testid="unreachable"]').exists()).toBe(false)
    w.unmount()
  })

  it('tells a new user what to do next when nothing was recorded', async () => {
    fakeServer({
      ...dashboardRoutes(),
      'GET /api/dashboard/summary': () => ({ body: summary({ today_spend_usd: 0, month_spend_usd: 0, today_requests: 0, active_sessions: 0, error_rate: 0 }) }),
      'GET /api/dashboard/costs': (r) => ({ body: { group_by: r.query.get('group_by'), range: '24h', rows: [] } }),
      'GET /api/dashboard/sessions': () => ({ body: { sessions: [] } }),
    })
    const w = mount(App, { props: { origin: 'http://127.0.0.1:8787' }, attachTo: document.body })
    await vi.waitFor(() => expect(w.find('[data-testid="getting-started"]').exists()).toBe(true))
    expect(w.get('[data-testid="getting-started"]').text()).toContain('http://127.0.0.1:8787')
    w.unmount()
  })

  it('shows a banner while the server is unreachable', async () => {
    const server = fakeServer(dashboardRoutes())
    server.setDown(true)
    const w = mount(App, { props: { origin: 'http://127.0.0.1:8787' }, attachTo: document.body })
    await vi.waitFor(() => expect(w.find('[data-testid="unreachable"]').exists()).toBe(true))
    expect(w.get('[data-testid="unreachable"]').text()).toContain("Can't reach the Burnrate server at http://127.0.0.1:8787")
    server.setDown(false)
    await useDashboard().refresh()
    await vi.waitFor(() => expect(w.find('[data-testid="unreachable"]').exists()).toBe(false))
    w.unmount()
  })

  it('keeps the admin panel unlocked through a passing admin API error, and retries a failed first load', async () => {
    const rule = { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-*', daily_limit_usd: 5, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', overridden: false, created_at: null }
    let busy = 1 // the next answers of /api/admin/api-keys that are a 503 (server.max_connections reached)
    fakeServer({
      ...dashboardRoutes(),
      'GET /api/admin/budgets/rules': () => ({ body: [rule] }),
      'GET /api/admin/api-keys': () => (busy-- > 0 ? err(503, 'service_unavailable', 'Busy, try again.') : { body: [] }),
    })
    sessionStorage.setItem(TOKEN_KEY, 'admin-token')
    const w = mount(App, { props: { origin: 'http://127.0.0.1:8787', autostart: false }, attachTo: document.body })
    const dash = useDashboard()
    const rows = () => w.findAll('#rules [data-testid="rule-row"]').length
    // The first load met the 503: the next refresh tries again and unlocks.
    await vi.waitFor(() => expect(w.text()).toContain('Busy, try again.'))
    await dash.refresh()
    await vi.waitFor(() => expect(rows()).toBe(1))
    // Unlocked, one refresh fails: still unlocked, with the rules, saying what failed...
    busy = 1
    await dash.refresh()
    await vi.waitFor(() => expect(w.get('#rules').text()).toContain('Busy, try again.'))
    expect(rows()).toBe(1)
    expect(w.find('#rules [data-testid="admin-token"]').exists()).toBe(false)
    // ...until the next one succeeds.
    await dash.refresh()
    await vi.waitFor(() => expect(w.get('#rules').text()).not.toContain('Busy, try again.'))
    expect(rows()).toBe(1)
    w.unmount()
  })
})
