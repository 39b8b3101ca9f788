// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it } from 'vitest'
import type { CostRow } from '../../../shared/api'
import { costs, sessions } from '../testing/sample'
import BreakdownTable from './BreakdownTable.vue'
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
