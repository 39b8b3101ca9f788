// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import App from './App.vue'
import { useDashboard } from './stores/dashboard'
import { fakeServer } from './testing/fake-server'
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
})
