// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import { err, fakeServer, flush } from '../testing/fake-server'
import { alertsLog, budgets, call, costs, sessions, stats, summary } from '../testing/sample'
import AlertDeliveries from './AlertDeliveries.vue'
import ApiKeys from './ApiKeys.vue'
import BudgetForecast from './BudgetForecast.vue'
import BreakdownTable from './BreakdownTable.vue'
import BudgetRules from './BudgetRules.vue'
import ConnectPanel from './ConnectPanel.vue'
import ErrorStats from './ErrorStats.vue'
import ExpensiveTable from './ExpensiveTable.vue'
import LimitBar from './LimitBar.vue'
import Money from './Money.vue'
import SessionsTable from './SessionsTable.vue'
import SummaryCards from './SummaryCards.vue'

beforeEach(() => {
  sessionStorage.clear()
  setActivePinia(createPinia())
})
afterEach(() => vi.unstubAllGlobals())

describe('Money', () => {
  it('shows the short figure with the exact one on hover', () => {
    const w = mount(Money, { props: { value: 0.004213579 } })
    expect(w.text()).toBe('$0.0042')
    expect(w.attributes('title')).toContain('$0.004213579')
  })
  it('marks unpriced and estimated amounts', () => {
    const w = mount(Money, { props: { value: 0, priced: false, estimated: true } })
    expect(w.text()).toContain('unpriced')
    expect(w.text()).toContain('est.')
    expect(w.attributes('title')).toMatch(/no price is known/)
    expect(mount(Money, { props: { value: 1 } }).text()).toBe('$1.00')
  })
})

describe('SummaryCards', () => {
  it('shows every figure, formatted', () => {
    const w = mount(SummaryCards, { props: { summary: summary(), loading: false } })
    const v = (id: string) => w.get(`[data-testid="${id}"] .value`).text()
    expect(v('card-today')).toBe('$12.34')
    expect(v('card-month')).toBe('$1.2k')
    expect(v('card-requests')).toBe('1,520')
    expect(v('card-avg')).toBe('$0.0081')
    expect(v('card-sessions')).toBe('3')
    expect(v('card-errors')).toBe('1.2%')
    expect(w.get('[data-testid="card-month"] .money').attributes('title')).toContain('$1,234.50')
  })
  it("says the average is over the calls billed per token, a plan's calls not counted, and shows none when every call was a plan's", () => {
    const w = mount(SummaryCards, { props: { summary: summary({ today_requests: 9, today_billed_requests: 1, avg_cost_per_request_usd: 0.9, today_unpriced_requests: 0 }), loading: false } })
    const card = w.get('[data-testid="card-avg"]')
    expect(card.get('h3').text()).toBe('Avg cost / billed call')
    expect(card.get('.value').text()).toBe('$0.90')
    expect(card.get('[data-testid="avg-over"]').text()).toMatch(/^1 billed call today/)
    expect(card.attributes('title')).toContain('8 subscription plan calls are not counted')
    const plans = mount(SummaryCards, { props: { summary: summary({ today_requests: 4, today_billed_requests: 0, avg_cost_per_request_usd: 0 }), loading: false } })
    expect(plans.get('[data-testid="card-avg"] .value').text()).toBe('—')
    expect(plans.get('[data-testid="avg-over"]').text()).toMatch(/^0 billed calls today/)
  })
  it('reads a summary from a server before today_billed_requests (a rolling upgrade\'s older instance) as that server meant its average', () => {
    // Such a server's average is over all of today's calls; the count of billed ones is unknown.
    const { today_billed_requests: _, ...old } = summary({ today_requests: 10, avg_cost_per_request_usd: 0.09, today_unpriced_requests: 0 })
    const w = mount(SummaryCards, { props: { summary: old as ReturnType<typeof summary>, loading: false } })
    const card = w.get('[data-testid="card-avg"]')
    expect(card.get('.value').text()).toBe('$0.09')
    expect(card.get('[data-testid="avg-over"]').text()).not.toMatch(/NaN|undefined/)
    expect(card.attributes('title') ?? '').not.toMatch(/NaN|undefined/)
  })
  it('shows skeletons before the first answer, not zeros', () => {
    const w = mount(SummaryCards, { props: { summary: null, loading: true } })
    expect(w.findAll('.skeleton')).toHaveLength(6)
    expect(w.text()).not.toContain('$0.00')
  })
})

describe('BreakdownTable', () => {
  it('sorts by cost, then by any column on click (and back)', async () => {
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', loading: false } })
    const keys = () => w.findAll('[data-testid="breakdown-row"] td.key').map((td) => td.attributes('title'))
    expect(keys()).toEqual(['claude-sonnet-4-5', '<b>bold</b>', 'gpt-4o-mini'])
    const requestsHeader = w.findAll('th').find((th) => th.text().startsWith('Requests'))!
    await requestsHeader.get('button').trigger('click')
    expect(keys()).toEqual(['gpt-4o-mini', 'claude-sonnet-4-5', '<b>bold</b>'])
    expect(requestsHeader.attributes('aria-sort')).toBe('descending')
    await requestsHeader.get('button').trigger('click')
    expect(keys()).toEqual(['<b>bold</b>', 'claude-sonnet-4-5', 'gpt-4o-mini'])
  })
  it('renders call data as text, never as HTML', () => {
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', loading: false } })
    expect(w.find('td b').exists()).toBe(false)
    expect(w.text()).toContain('<b>bold</b>')
  })
  it('shows tokens, cache tokens, cost and provider', () => {
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', loading: false } })
    const first = w.findAll('[data-testid="breakdown-row"]')[0].findAll('td').map((td) => td.text())
    expect(first.slice(0, 7)).toEqual(['claude-sonnet-4-5Anthropic', '10', '50k', '2,000', '40k', '1,000', '$1.50'])
    expect(w.get('[data-testid="breakdown-row"] .prov').attributes('title')).toBe('anthropic')
  })
  it('names providers as people know them, keeping the id on hover and unknown ids as they are', () => {
    const rows = [
      { ...costs().rows[0], key: 'foundry', provider: null },
      { ...costs().rows[1], key: 'code-assist', provider: null },
      { ...costs().rows[2], key: 'a-newer-provider', provider: null },
    ]
    const w = mount(BreakdownTable, { props: { costs: { group_by: 'provider', range: '24h', rows, total_rows: 3 }, group: 'provider', range: '24h', loading: false } })
    const cells = w.findAll('[data-testid="breakdown-row"] td.key')
    expect(cells.map((td) => td.text())).toEqual(['Microsoft Foundry', 'a-newer-provider', 'Gemini Code Assist'])
    expect(cells.map((td) => td.attributes('title'))).toEqual(['foundry', 'a-newer-provider', 'code-assist'])
  })
  it('asks for another grouping', async () => {
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', loading: false } })
    await w.get('[data-group="agent"]').trigger('click')
    expect(w.emitted('update:group')).toEqual([['agent']])
  })
  it('offers the member grouping and filter only on a team server (more than one member)', async () => {
    const one = { group_by: 'member', range: '24h', rows: costs('member').rows.slice(0, 1), total_rows: 1 } as const
    const solo = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', loading: false, members: one } })
    expect(solo.find('[data-group="member"]').exists()).toBe(false)
    expect(solo.find('[data-testid="member-filter"]').exists()).toBe(false)
    const members = { group_by: 'member', range: '24h', total_rows: 3, rows: [
      { ...costs().rows[0], key: 'alice', provider: null },
      { ...costs().rows[1], key: 'bob', provider: null },
      { ...costs().rows[2], key: '', provider: null },
    ] } as const
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '24h', tenant: 'acme', loading: false, members, member: '' } })
    await w.get('[data-group="member"]').trigger('click')
    expect(w.emitted('update:group')).toEqual([['member']])
    const select = w.get('[data-testid="member-filter"]')
    expect(select.findAll('option').map((o) => o.text())).toEqual(['All members', 'alice', 'bob'])
    await select.setValue('bob')
    expect(w.emitted('update:member')).toEqual([['bob']])
    await w.setProps({ member: 'bob' } as Record<string, unknown>)
    expect(w.get('[data-testid="export-csv"]').attributes('href')).toBe('/api/dashboard/export?format=csv&range=24h&tenant=acme&member=bob')
  })
  it('shows the folded (other) row of a model breakdown with no provider, last under every sort', async () => {
    // The server's folded row spans providers: provider null (an older server sent "").
    for (const provider of [null, '']) {
      const rows = [...costs().rows, { key: '(other)', other: true, provider, requests: 90, input_tokens: 9e6, output_tokens: 9e5, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 99 }]
      const w = mount(BreakdownTable, { props: { costs: { group_by: 'model', range: '24h', rows, total_rows: 40 }, group: 'model', range: '24h', loading: false } })
      const last = () => w.findAll('[data-testid="breakdown-row"]').at(-1)!
      const check = () => {
        expect(last().get('td.key').text()).toBe(`Other (${40 - costs().rows.length} more)`)
        expect(last().find('.prov').exists()).toBe(false)
      }
      check()
      for (const col of ['Cost', 'Cost', 'Model', 'Model', 'Requests']) {
        await w.findAll('th button').find((b) => b.text().startsWith(col))!.trigger('click')
        check()
      }
    }
  })
  it('tells a new user what to do when there is nothing', () => {
    const w = mount(BreakdownTable, { props: { costs: { group_by: 'model', range: '24h', rows: [] }, group: 'model', range: '24h', loading: false } })
    expect(w.get('[data-testid="empty"]').text()).toMatch(/connect an agent/i)
  })
})

describe('ExpensiveTable and SessionsTable', () => {
  it('list model, agent, session, tokens, cost, latency and flags', () => {
    const w = mount(ExpensiveTable, {
      props: { calls: [call(), call({ id: 2, cost_usd: 0, priced: false, model: 'mystery-1', agent: '<script>x</script>' })], range: '24h', loading: false },
    })
    const rows = w.findAll('[data-testid="expensive-row"]')
    expect(rows[0].text()).toContain('gpt-4o-mini')
    expect(rows[0].text()).toContain('1,149 / 353')
    expect(rows[0].text()).toContain('$0.00031')
    expect(rows[0].text()).toContain('842 ms')
    expect(rows[1].text()).toContain('unpriced')
    expect(rows[1].text()).toContain('<script>x</script>')
    expect(w.find('script').exists()).toBe(false)
    expect(w.find('[data-testid="plan-call"]').exists()).toBe(false)
  })
  it("marks a plan's call: its cost is an API-equivalent value, not spend", () => {
    const w = mount(ExpensiveTable, { props: { calls: [call({ billing: 'subscription', provider: 'anthropic', model: 'claude-opus-4-5' })], range: '24h', loading: false } })
    expect(w.get('[data-testid="plan-call"]').attributes('title')).toMatch(/API-equivalent value, not spend/)
  })
  it('shows session status and duration', () => {
    const w = mount(SessionsTable, { props: { sessions: sessions().sessions, loading: false } })
    expect(w.text()).toContain('active')
    expect(w.text()).toContain('1h 4m')
    expect(w.text()).toContain('$0.50')
    expect(w.find('[data-testid="empty"]').exists()).toBe(false)
    expect(mount(SessionsTable, { props: { sessions: [], loading: false } }).find('[data-testid="empty"]').exists()).toBe(true)
  })
  it("says how many of a session's calls retention pruned, whose price is no longer known", () => {
    const base = sessions().sessions[0]
    const rows = [
      { ...base, session: 'long', requests: 7, cost_usd: 0.03, unpriced_requests: 1, pruned_requests: 5 },
      { ...base, session: 'kept', unpriced_requests: 1 },
    ]
    const w = mount(SessionsTable, { props: { sessions: rows, loading: false } })
    const [long, kept] = w.findAll('[data-testid="session-row"]')
    expect(long.get('[data-testid="pruned-count"]').text()).toBe('5 pruned')
    expect(long.get('[data-testid="pruned-count"]').attributes('title')).toMatch(/^5 calls of this session were pruned \(ledger\.retention_days\)/)
    expect(long.get('[data-testid="unpriced-count"]').text()).toBe('+ 1 unpriced')
    expect(kept.find('[data-testid="pruned-count"]').exists()).toBe(false)
  })
})

describe('ConnectPanel', () => {
  it('uses the server address for every agent, with copyable blocks', async () => {
    const w = mount(ConnectPanel, { props: { origin: 'http://127.0.0.1:9999' } })
    expect(w.text()).toContain('ANTHROPIC_BASE_URL=http://127.0.0.1:9999')
    const tabs = w.findAll('[role="tab"]')
    expect(tabs.map((t) => t.text())).toEqual(['Claude Code', 'Codex CLI', 'Gemini CLI', 'opencode', 'Qwen Code', 'Cline CLI', 'Cursor', 'Aider', 'OpenAI SDK', 'Anthropic SDK', 'Behind a proxy'])
    await tabs[1].trigger('click')
    expect(w.text()).toContain('openai_base_url = "http://127.0.0.1:9999/v1"')
    expect(w.text()).toContain('env_key = "OPENAI_API_KEY"')
    await tabs[2].trigger('click')
    expect(w.text()).toContain('GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9999')
    await tabs[3].trigger('click')
    expect(w.text()).toContain('"baseURL": "http://127.0.0.1:9999/v1"')
    await tabs[4].trigger('click')
    expect(w.text()).toContain('"baseUrl": "http://127.0.0.1:9999/v1"')
    expect(w.text()).toContain('"X-Burnrate-Session": "${session_id}"')
    await tabs[5].trigger('click')
    expect(w.text()).toContain('-b http://127.0.0.1:9999/v1')
    await tabs[8].trigger('click')
    expect(w.text()).toContain("baseURL: 'http://127.0.0.1:9999/v1'")
    await tabs[9].trigger('click')
    expect(w.text()).toContain("baseURL: 'http://127.0.0.1:9999'")
    const writeText = vi.fn(async () => {})
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true })
    await w.get('[data-testid="copy"]').trigger('click')
    await flush()
    expect(writeText).toHaveBeenCalledWith(expect.stringContaining("baseURL: 'http://127.0.0.1:9999'"))
    expect(w.get('[data-testid="copy"]').text()).toBe('Copied')
    await tabs[10].trigger('click')
    expect(w.text()).toContain('export NO_PROXY="${NO_PROXY:+$NO_PROXY,}127.0.0.1,localhost" no_proxy=')
    expect(w.text()).toContain('$env:NO_PROXY = ("$env:NO_PROXY,127.0.0.1,localhost").TrimStart(",")')
  })
})

describe('BudgetRules', () => {
  it('says clearly when the admin API is disabled', async () => {
    fakeServer({})
    const w = mount(BudgetRules)
    const { useAdmin } = await import('../stores/admin')
    await useAdmin().load()
    await nextTick()
    expect(w.get('[data-testid="admin-disabled"]').text()).toMatch(/admin API is disabled/)
    expect(w.find('[data-testid="admin-token"]').exists()).toBe(false)
  })

  it('unlocks with the token, creates a rule, shows the server error for a bad one', async () => {
    const rules: any[] = []
    const server = fakeServer({
      'GET /api/admin/budgets/rules': (r) => (r.headers.authorization === 'Bearer t0k' ? { body: rules } : err(401, 'unauthorized', 'no')),
      'GET /api/admin/api-keys': () => ({
        body: [
          {
            api_key_hash: 'h',
            key_hint: 'sk-…9f3a',
            tenant: '',
            requests_month: 3,
            spend_today_usd: 4,
            spend_month_usd: 9,
            last_seen_at: null,
            rule: rules[0] ?? null,
          },
        ],
      }),
      // The rule's own window for the key: $4 of its $5 (the key's whole day, $4 too here).
      'GET /api/dashboard/budgets': () => ({
        body: {
          overall: [],
          rules: rules.map((rule) => ({
            rule,
            api_key_hash: 'h',
            key_hint: 'sk-…9f3a',
            windows: [{ period: 'daily', limit_usd: 5, spent_usd: 4, pct: 0.8, projected_usd: 4, exhausted_at: null, resets_at: '2026-11-22T00:00:00.000Z', burn_rate_usd_per_hour: 0 }],
          })),
        },
      }),
      'POST /api/admin/budgets/rules': (r) => {
        const b = r.body as any
        if (b.daily_limit_usd === null && b.monthly_limit_usd === null) return err(400, 'invalid_request', 'daily_limit_usd or monthly_limit_usd must be a number.')
        const stored = { ...b, source: 'runtime', overridden: false, created_at: null }
        rules.push(stored)
        return { status: 201, body: stored }
      },
    })
    const w = mount(BudgetRules)
    const { useAdmin } = await import('../stores/admin')
    await useAdmin().load()
    await nextTick()
    await w.get('[data-testid="admin-token"]').setValue('t0k')
    await w.get('form').trigger('submit')
    await vi.waitFor(() => expect(w.find('[data-testid="new-rule"]').exists()).toBe(true))
    await w.get('[data-testid="new-rule"]').trigger('click')
    await w.get('#rf-pattern').setValue('sk-*')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await vi.waitFor(() => expect(w.get('[data-testid="rule-error"]').text()).toMatch(/daily_limit_usd/))
    await w.get('#rf-daily').setValue('5')
    await w.get('#rf-soft').setValue('80')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await vi.waitFor(() => expect(w.findAll('[data-testid="rule-row"]')).toHaveLength(1))
    const { useDashboard } = await import('../stores/dashboard')
    await useDashboard().refresh()
    await nextTick()
    expect(server.calls.filter((c) => c.method === 'POST').at(-1)?.body).toEqual({
      api_key_pattern: 'sk-*',
      daily_limit_usd: 5,
      monthly_limit_usd: null,
      action: 'block',
      soft_limit_pct: 0.8,
    })
    // Spend of the key under the rule against its daily limit: $4 of $5.
    const bar = w.get('[data-testid="rule-row"] [role="progressbar"]')
    expect(bar.attributes('aria-valuenow')).toBe('80')
    expect(w.get('[data-testid="rule-row"]').text()).toContain('sk-…9f3a')
  })

  it('names a number field that is not a number before sending anything', async () => {
    const server = fakeServer({
      'GET /api/admin/budgets/rules': () => ({ body: [] }),
      'GET /api/admin/api-keys': () => ({ body: [] }),
    })
    const w = mount(BudgetRules)
    const { useAdmin } = await import('../stores/admin')
    await useAdmin().signIn('t')
    await nextTick()
    await w.get('[data-testid="new-rule"]').trigger('click')
    await w.get('#rf-pattern').setValue('sk-*')
    await w.get('#rf-daily').setValue('five')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await nextTick()
    expect(w.get('[data-testid="rule-error"]').text()).toMatch(/Daily limit must be a number/)
    expect(server.calls.some((c) => c.method === 'POST')).toBe(false)
  })
})

describe('SessionsTable with many sessions', () => {
  it('shows the running ones and the latest, with a way to see all', async () => {
    const base = sessions().sessions[0]
    const many = Array.from({ length: 30 }, (_, i) => ({ ...base, session: `s-${i}`, status: (i < 10 ? 'active' : 'idle') as 'active' | 'idle' }))
    const w = mount(SessionsTable, { props: { sessions: many, loading: false } })
    expect(w.findAll('[data-testid="session-row"]')).toHaveLength(10)
    expect(w.text()).toContain('10 active sessions now; 30 rows (one per tenant, agent and session) with a call')
    await w.get('button.more').trigger('click')
    expect(w.findAll('[data-testid="session-row"]')).toHaveLength(30)
  })
})

describe('SessionsTable with a session two agents carried', () => {
  it('counts active sessions by session id, as the summary card does, and calls its rows rows', () => {
    const base = sessions().sessions[0]
    const rows = [
      { ...base, session: 'job-42', agent: 'planner', status: 'active' as const },
      { ...base, session: 'job-42', agent: 'coder', status: 'active' as const },
      { ...base, session: 'job-7', agent: 'coder', status: 'idle' as const },
    ]
    const w = mount(SessionsTable, { props: { sessions: rows, total: 3, loading: false } })
    expect(w.get('#sessions .sub').text()).toBe('1 active session now; 3 rows (one per tenant, agent and session) with a call in the last 24 hours')
    expect(w.findAll('[data-testid="session-row"]')).toHaveLength(3)
  })
})

describe('BreakdownTable export', () => {
  it('links the CSV export of the same window and tenant', () => {
    const w = mount(BreakdownTable, { props: { costs: costs(), group: 'model', range: '7d', tenant: 'acme', loading: false } })
    expect(w.get('[data-testid="export-csv"]').attributes('href')).toBe('/api/dashboard/export?format=csv&range=7d&tenant=acme')
  })
})

describe('BudgetForecast', () => {
  it('shows each window of each rule and key with its spend, projection and when the limit falls', () => {
    const w = mount(BudgetForecast, { props: { budgets: budgets(), loading: false } })
    const rows = w.findAll('[data-testid="budget-window"]')
    expect(rows).toHaveLength(2)
    expect(rows[0].text()).toContain('sk-dev-*')
    expect(rows[0].text()).toContain('sk-…0001')
    expect(rows[0].text()).toContain('$7.50')
    expect(rows[0].attributes('data-level')).toBe('warn')
    expect(rows[1].text()).toContain('5 h window')
    expect(rows[1].text()).toContain('not at this pace')
    expect(w.get('[data-testid="overall-forecast"]').text()).toContain('on pace for')
    expect(w.get('[data-testid="overall-forecast"]').text()).toContain('$120')
  })

  it('says so when there are no rules', () => {
    const w = mount(BudgetForecast, { props: { budgets: { rules: [], overall: [] }, loading: false } })
    expect(w.find('[data-testid="no-budgets"]').exists()).toBe(true)
  })
})

describe('AlertDeliveries', () => {
  it('lists each delivery with its status, attempts and last answer', () => {
    const w = mount(AlertDeliveries, { props: { log: alertsLog() } })
    const rows = w.findAll('[data-testid="delivery-row"]')
    expect(rows.map((r) => r.attributes('data-status'))).toEqual(['failed', 'delivered'])
    expect(rows[0].text()).toContain('HTTP 500')
    expect(rows[0].text()).toContain('6')
    expect(w.text()).toContain('1 webhook;')
    const marks = w.findAll('[data-testid="runaway-row"]')
    expect(marks).toHaveLength(1)
    expect(marks[0].text()).toContain('s-loop')
    expect(marks[0].text()).toContain('5 times')
  })

  it('says when no webhook is configured', () => {
    const w = mount(AlertDeliveries, { props: { log: { webhooks: 0, deliveries: [], runaway: [] } } })
    expect(w.text()).toContain('No webhooks configured')
  })
})

describe('LimitBar', () => {
  it('shows the share spent, and never a smaller share than the real one', () => {
    const at = (spent: number, limit: number | null) => mount(LimitBar, { props: { spent, limit, label: 'daily' } })
    expect(at(5, 10).find('.pct').text()).toBe('50%')
    expect(at(99.9, 10).find('.pct').text()).toBe('999%')
    const way = at(150, 10)
    expect(way.find('.pct').text()).toBe('>999%')
    expect(way.attributes('data-level')).toBe('bad')
    expect(way.attributes('title')).toContain('(1500%)')
    expect(at(1, null).text()).toBe('no limit')
  })
  it('prints a spend and its limit differently whenever they differ, at any size', () => {
    const line = (spent: number, limit: number) => mount(LimitBar, { props: { spent, limit, label: 'daily' } }).get('.line > .num').text()
    // $40 left of $10,000: not "$10k / $10k".
    expect(line(9960, 10000)).toBe('$9,960.00 / $10,000.00')
    expect(line(1049, 1000)).toBe('$1,049.00 / $1,000.00')
    expect(line(9999.996, 10000)).toBe('$9,999.996 / $10,000.00')
    expect(line(4.5, 5)).toBe('$4.50 / $5.00')
  })
})

describe('ApiKeys with more keys than the server lists', () => {
  it("labels the folded row as the other keys: no hash, no rule claimed, with the admin token too", async () => {
    const key = (i: number) => ({ key: `${i}`.padStart(64, 'f'), key_hint: `sk-…${i}`, provider: null, requests: 1, input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 2 })
    const other = { key: '(other)', other: true, provider: null, requests: 5, input_tokens: 5, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 5.1 }
    const keys = { group_by: 'api_key' as const, range: '24h' as const, rows: [key(1), key(2), other], total_rows: 7 }
    fakeServer({
      'GET /api/admin/budgets/rules': () => ({ body: [] }),
      'GET /api/admin/api-keys': () => ({ body: [] }),
    })
    const w = mount(ApiKeys, { props: { costs: keys, range: '24h', loading: false } })
    const last = () => w.findAll('[data-testid="key-row"]').at(-1)!
    expect(last().text()).toContain('Other (5 more keys)')
    expect(last().get('td.key').attributes('title')).not.toContain('SHA-256')
    const { useAdmin } = await import('../stores/admin')
    await useAdmin().signIn('t')
    await nextTick()
    expect(last().text()).toContain('Other (5 more keys)')
    expect(last().text()).not.toContain('none')
  })
})

describe('ErrorStats', () => {
  it('reads stats from a server before billed_requests (a rolling upgrade\'s older instance) as that server meant its average', () => {
    const { billed_requests: _, ...old } = stats()
    const w = mount(ErrorStats, { props: { stats: old as ReturnType<typeof stats>, range: '24h', loading: false } })
    const avg = w.findAll('dl > div').find((d) => d.text().startsWith('Avg cost'))!
    expect(avg.get('[data-testid="stat-avg-cost"]').text()).toBe('$0.01')
    expect(avg.attributes('title') ?? '').not.toMatch(/NaN|undefined/)
  })
})
