// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import type { PlanAccount } from '../../../shared/api'
import { useDashboard } from '../stores/dashboard'
import { fakeServer, flush } from '../testing/fake-server'
import PlansPanel from './PlansPanel.vue'

beforeEach(() => setActivePinia(createPinia()))
afterEach(() => vi.restoreAllMocks())

const account = (id: string, used: number, hint = 'eyJ…wwww'): PlanAccount => ({
  provider: 'chatgpt',
  account_hint: hint,
  account_id: id,
  billing: 'subscription',
  updated_at: new Date().toISOString(),
  windows: [{ name: '5h', utilization: used, resets_at: null, status: '', projected_exhausted_at: null, projected_at_reset: null, window_minutes: 300 }],
  details: {},
})

describe('PlansPanel', () => {
  it('shows two accounts with the same hint (one ChatGPT token in two workspaces) as two, across refreshes, without a duplicate Vue key', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    let accounts = [account('aaaaaaaaaaaaaaaa', 0.2), account('bbbbbbbbbbbbbbbb', 0.7), account('dddddddddddddddd', 0.5, 'eyJ…zzzz')]
    fakeServer({ 'GET /api/dashboard/plans': () => ({ body: { accounts } }) })
    const w = mount(PlansPanel)
    await flush()
    await nextTick()
    const shown = () => w.findAll('[data-testid="plan-account"]').map((a) => a.get('.num').text())
    expect(shown()).toEqual(['20%', '70%', '50%'])
    // Used since, most recently first: the other account, then the second workspace.
    accounts = [account('dddddddddddddddd', 0.55, 'eyJ…zzzz'), account('bbbbbbbbbbbbbbbb', 0.8), account('aaaaaaaaaaaaaaaa', 0.2)]
    useDashboard().lastUpdated = Date.now()
    await flush()
    await nextTick()
    expect(shown()).toEqual(['55%', '80%', '20%'])
    expect(warn.mock.calls.map((c) => String(c[0])).filter((m) => /Duplicate keys/i.test(m))).toEqual([])
  })
})
