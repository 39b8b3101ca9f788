// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import { fakeServer } from '../testing/fake-server'
import BudgetRules from './BudgetRules.vue'

/**
 * The rule form's limits are read as plain decimal amounts of US dollars (digits, one optional dot,
 * an optional leading "$" and thousands commas). Number() read "0x10" as $16, "1e3" as $1,000 and
 * "Infinity" as no number only by luck: a limit typed so must be refused with an inline error, and
 * nothing sent. A blank field is no limit, never $0 (a limit of 0 blocks every call).
 */
beforeEach(() => {
  sessionStorage.clear()
  setActivePinia(createPinia())
})

async function openForm() {
  const server = fakeServer({
    'GET /api/admin/budgets/rules': () => ({ body: [] }),
    'GET /api/admin/api-keys': () => ({ body: [] }),
    'POST /api/admin/budgets/rules': (r) => ({ status: 201, body: { ...(r.body as object), source: 'runtime', overridden: false, created_at: null } }),
  })
  const w = mount(BudgetRules)
  const { useAdmin } = await import('../stores/admin')
  await useAdmin().signIn('t')
  await nextTick()
  await w.get('[data-testid="new-rule"]').trigger('click')
  await w.get('#rf-pattern').setValue('sk-*')
  const posts = () => server.calls.filter((c) => c.method === 'POST').map((c) => c.body as Record<string, unknown>)
  return { w, posts }
}

describe('the rule form’s amounts', () => {
  it.each(['0x10', '1e3', '1E3', 'Infinity', '0b11', '0o17', '1_000', '-5', '+5', '5.0.1', '1,00', '12,3456', '$', '.', '5 5', '$$5', '5$', '٥'])(
    'refuses a daily limit typed as %j, sending nothing',
    async (typed) => {
      const { w, posts } = await openForm()
      await w.get('#rf-daily').setValue(typed)
      await w.get('[data-testid="rule-form"]').trigger('submit')
      await nextTick()
      expect(w.get('[data-testid="rule-error"]').text()).toMatch(/^Daily limit must be a number of US dollars written in digits/)
      expect(posts()).toEqual([])
    },
  )

  it('refuses a monthly limit or a warn-at typed in another notation too', async () => {
    const { w, posts } = await openForm()
    await w.get('#rf-daily').setValue('5')
    await w.get('#rf-monthly').setValue('2e2')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await nextTick()
    expect(w.get('[data-testid="rule-error"]').text()).toMatch(/^Monthly limit must be a number/)
    await w.get('#rf-monthly').setValue('')
    await w.get('#rf-soft').setValue('0x50')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await nextTick()
    expect(w.get('[data-testid="rule-error"]').text()).toMatch(/^Warn at must be a percentage written in digits/)
    expect(posts()).toEqual([])
  })

  it.each([
    ['5', 5],
    ['0.50', 0.5],
    ['.5', 0.5],
    ['$12', 12],
    ['$1,250.75', 1250.75],
    ['1250', 1250],
    [' 7.25 ', 7.25],
    ['0', 0],
    ['0.000001', 0.000001],
  ])('saves %j as %d, unrounded', async (typed, usd) => {
    const { w, posts } = await openForm()
    await w.get('#rf-daily').setValue(typed)
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await vi.waitFor(() => expect(posts()).toHaveLength(1))
    expect(posts()[0]).toMatchObject({ daily_limit_usd: usd, monthly_limit_usd: null })
  })

  it('sends a blank or spaces-only field as no limit, never as $0', async () => {
    const { w, posts } = await openForm()
    await w.get('#rf-daily').setValue('   ')
    await w.get('#rf-monthly').setValue('40')
    await w.get('#rf-soft').setValue(' ')
    await w.get('[data-testid="rule-form"]').trigger('submit')
    await vi.waitFor(() => expect(posts()).toHaveLength(1))
    expect(posts()[0]).toMatchObject({ daily_limit_usd: null, monthly_limit_usd: 40, soft_limit_pct: null })
  })
})
