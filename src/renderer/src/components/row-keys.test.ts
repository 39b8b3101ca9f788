// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import type { CostRow } from '../../../shared/api'
import { alertsLog, budgets, costs, sessions } from '../testing/sample'
import AlertDeliveries from './AlertDeliveries.vue'
import BreakdownTable from './BreakdownTable.vue'
import BudgetForecast from './BudgetForecast.vue'
import SessionsTable from './SessionsTable.vue'

/**
 * Rows whose names look like another row's key: a group literally named "(other)" beside the
 * summary row, session, agent and tenant names holding "|". Each is its own row (Vue keys them
 * apart, so it never reuses one row's element for another or drops one), before and after an update.
 */

beforeEach(() => setActivePinia(createPinia()))

describe('BreakdownTable row keys', () => {
  it('keeps a group named "(other)" apart from the summary row of the groups folded into it', async () => {
    const base = costs().rows[0]
    const row = (key: string, cost: number, other = false): CostRow => ({ ...base, key, provider: null, cost_usd: cost, requests: cost, unpriced_requests: 0, ...(other ? { other } : {}) })
    const table = (rows: CostRow[]) => ({ group_by: 'agent' as const, range: '24h' as const, rows, total_rows: 9 })
    const w = mount(BreakdownTable, { props: { costs: table([row('(other)', 7), row('(other)', 1, true)]), group: 'agent', range: '24h', loading: false } })
    const cells = () => w.findAll('[data-testid="breakdown-row"]').map((tr) => `${tr.findAll('td')[0].text()} = ${tr.findAll('td')[1].text()}`)
    expect(cells()).toEqual(['(other) = 7', 'Other (8 more) = 1'])
    // The summary row goes (every group fits) while the group named "(other)" stays.
    await w.setProps({ costs: table([row('a', 4), row('(other)', 6), row('b', 8)]) } as Record<string, unknown>)
    expect(cells()).toEqual(['b = 8', '(other) = 6', 'a = 4'])
    await w.setProps({ costs: table([row('(other)', 2), row('(other)', 5, true)]) } as Record<string, unknown>)
    expect(cells()).toEqual(['(other) = 2', 'Other (8 more) = 5'])
  })
})

describe('SessionsTable row keys', () => {
  it('keeps rows apart whose session, agent or tenant holds "|"', async () => {
    const base = sessions().sessions[0]
    const rows = [
      { ...base, session: 'a|b', agent: 'c', tenant: '', requests: 1 },
      { ...base, session: 'a', agent: 'b|c', tenant: '', requests: 2 },
      { ...base, session: 'a', agent: 'b', tenant: 'c|', requests: 3 },
      { ...base, session: 'a|b|c', agent: '', tenant: '', requests: 4 },
    ]
    const w = mount(SessionsTable, { props: { sessions: rows, loading: false } })
    expect(w.findAll('[data-testid="session-row"]').map((tr) => tr.findAll('td')[2].text())).toEqual(['1', '2', '3', '4'])
    await w.setProps({ sessions: [...rows].reverse() } as Record<string, unknown>)
    expect(w.findAll('[data-testid="session-row"]').map((tr) => tr.findAll('td')[2].text())).toEqual(['4', '3', '2', '1'])
  })
})

/** Vue's warnings while `run` runs (a duplicate key is one: rows then share an element, and an update can show one's figures in another's place). */
async function vueWarnings(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = []
  const spy = vi.spyOn(console, 'warn').mockImplementation((...a: unknown[]) => void seen.push(a.map(String).join(' ')))
  try {
    await run()
  } finally {
    spy.mockRestore()
  }
  return seen.filter((w) => /duplicate keys/i.test(w))
}

describe('BudgetForecast row keys', () => {
  it('keeps apart two rules on whole keys of the same hint that no key has used yet', async () => {
    // A rule on a whole key is named by the key's hint (sk-…0001): two keys ending alike read the
    // same, and neither used yet has a hash. Each is its own row, before and after an update.
    const base = budgets().rules[0]
    const entry = (limit: number, action: 'block' | 'warn') => ({
      ...base,
      rule: { ...base.rule, api_key_pattern: 'sk-…0001', action, window_hours: null, window_limit_usd: null, daily_limit_usd: limit },
      api_key_hash: null,
      key_hint: null,
      windows: [{ ...base.windows[0], limit_usd: limit, spent_usd: 0, pct: 0, projected_usd: 0, exhausted_at: null }],
    })
    const a = entry(5, 'block')
    const b = entry(7, 'warn')
    const x = { ...entry(1, 'warn'), rule: { ...entry(1, 'warn').rule, api_key_pattern: 'sk-x-*' } }
    const y = { ...entry(1, 'warn'), rule: { ...entry(1, 'warn').rule, api_key_pattern: 'sk-y-*' } }
    const limitsShown = (w: ReturnType<typeof mount>) => w.findAll('[data-testid="budget-window"]').map((tr) => tr.findAll('td')[0].text())
    let w!: ReturnType<typeof mount>
    const warnings = await vueWarnings(async () => {
      w = mount(BudgetForecast, { props: { budgets: { rules: [x, a, b], overall: [] }, loading: false } })
      await w.setProps({ budgets: { rules: [b, a, y], overall: [] } } as Record<string, unknown>)
    })
    expect(warnings).toEqual([])
    expect(limitsShown(w)).toEqual(['sk-…0001 warn', 'sk-…0001 block', 'sk-y-* warn'])
  })
})

describe('AlertDeliveries row keys', () => {
  it('keeps apart two runaway marks of one session name at the same moment from two keys', async () => {
    const base = alertsLog()
    const mark = (agent: string, key_hint: string, repeats: number) => ({ ...base.runaway[0], session: 'main', agent, key_hint, repeats })
    const one = mark('claude-code', 'sk-…0001', 3)
    const two = mark('codex', 'sk-…0002', 9)
    const other = (session: string) => ({ ...one, session })
    const shown = (w: ReturnType<typeof mount>) => w.findAll('[data-testid="runaway-row"]').map((tr) => tr.findAll('td')[1].text() + ' ' + tr.findAll('td')[2].text())
    let w!: ReturnType<typeof mount>
    const warnings = await vueWarnings(async () => {
      w = mount(AlertDeliveries, { props: { log: { ...base, runaway: [other('x'), one, two] } } })
      await w.setProps({ log: { ...base, runaway: [two, one, other('y')] } } as Record<string, unknown>)
    })
    expect(warnings).toEqual([])
    expect(shown(w)).toEqual([
      'main codex same claude-sonnet-4-5 request tail 9 times',
      'main claude-code same claude-sonnet-4-5 request tail 3 times',
      'y claude-code same claude-sonnet-4-5 request tail 3 times',
    ])
  })
})
