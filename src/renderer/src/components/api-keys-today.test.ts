// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it } from 'vitest'
import { nextTick } from 'vue'
import type { ApiKeyUsage, Costs } from '../../../shared/api'
import { fakeServer } from '../testing/fake-server'
import ApiKeys from './ApiKeys.vue'

/**
 * The API keys table's "Today" comes from the admin API (GET /api/admin/api-keys' spend_today_usd):
 * a key's whole day in every tenant, with no count of its calls of no known price. Beside a Cost
 * column filtered by tenant and marked "+ n unpriced", it read as the tenant's today, and as exact.
 * The contract gives that endpoint neither a tenant filter nor an unpriced count, so the column says
 * what it is: all tenants under a tenant filter, and unpriced calls counted as $0, unmarked.
 */
beforeEach(() => {
  sessionStorage.clear()
  setActivePinia(createPinia())
})

const HASH = 'a'.repeat(64)
const costs: Costs = {
  group_by: 'api_key',
  range: '24h',
  total_rows: 1,
  rows: [{ key: HASH, key_hint: 'sk-…aaaa', provider: null, requests: 3, input_tokens: 3, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 1.5, unpriced_requests: 2 }],
}
const usage: ApiKeyUsage = {
  api_key_hash: HASH,
  key_hint: 'sk-…aaaa',
  tenant: 'acme',
  requests_month: 9,
  spend_today_usd: 7.25,
  spend_month_usd: 20,
  last_seen_at: null,
  rule: null,
}

async function unlocked(props: Record<string, unknown>) {
  fakeServer({ 'GET /api/admin/budgets/rules': () => ({ body: [] }), 'GET /api/admin/api-keys': () => ({ body: [usage] }) })
  const w = mount(ApiKeys, { props: { costs, range: '24h', loading: false, ...props } })
  const { useAdmin } = await import('../stores/admin')
  await useAdmin().signIn('t')
  await nextTick()
  const header = () => w.findAll('th').find((th) => th.text().startsWith('Today'))!
  const cell = () => w.get('[data-testid="key-today"]')
  return { w, header, cell }
}

describe('the API keys table’s Today column', () => {
  it('says it counts every tenant when the dashboard is filtered to one', async () => {
    const { w, header, cell } = await unlocked({ tenant: 'acme' })
    expect(header().text()).toBe('Today (all tenants)')
    expect(header().attributes('title')).toMatch(/every tenant/)
    expect(header().attributes('title')).toMatch(/no known price count as \$0/)
    expect(cell().text()).toBe('$7.25')
    expect(w.get('[data-testid="keys-today-note"]').text()).toBe('Today is each key’s spend today in every tenant; Requests and Cost are tenant acme’s, last 24 hours.')
  })

  it('says calls of no known price are in it at $0, unmarked, without a tenant filter too', async () => {
    const { w, header } = await unlocked({})
    expect(header().text()).toBe('Today')
    expect(header().attributes('title')).toMatch(/no known price count as \$0/)
    expect(w.find('[data-testid="keys-today-note"]').exists()).toBe(false)
  })
})
