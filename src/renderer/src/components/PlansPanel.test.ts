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

  it('names each account as people know its provider: Gemini Code Assist, a Groq key, not their ids', async () => {
    const accounts = [
      { ...account('aaaaaaaaaaaaaaaa', 0.3, 'my-…proj'), provider: 'code-assist', windows: [{ ...account('a', 0.3).windows[0], name: 'gemini-2.5-pro', window_minutes: null }] },
      { ...account('bbbbbbbbbbbbbbbb', 0.1, 'gsk_…abcd'), provider: 'groq', billing: 'api' as const },
      account('cccccccccccccccc', 0.5),
    ]
    fakeServer({ 'GET /api/dashboard/plans': () => ({ body: { accounts } }) })
    const w = mount(PlansPanel)
    await flush()
    await nextTick()
    const heads = w.findAll('[data-testid="plan-account"] h3').map((h) => h.text())
    expect(heads).toEqual(['Gemini Code Assist my-…projplan', 'Groq gsk_…abcdAPI key limits', 'ChatGPT (Codex) eyJ…wwwwplan'])
  })
})
