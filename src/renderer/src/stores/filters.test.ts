// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia'
import { beforeEach, describe, expect, it } from 'vitest'
import { nextTick } from 'vue'
import { useFilters } from './filters'

beforeEach(() => setActivePinia(createPinia()))

describe('filters store', () => {
  it('starts from the URL', () => {
    window.history.replaceState(null, '', '/?range=1h&group=agent&tenant=acme&other=1')
    const f = useFilters()
    expect([f.range, f.group, f.tenant]).toEqual(['1h', 'agent', 'acme'])
  })

  it('writes changes back to the URL, keeping other parameters', async () => {
    window.history.replaceState(null, '', '/?other=1')
    const f = useFilters()
    f.setRange('30d')
    f.setGroup('session')
    f.setTenant('  globex  ')
    await nextTick()
    expect(window.location.search).toBe('?other=1&range=30d&group=session&tenant=globex')
    f.setRange('24h')
    f.setGroup('model')
    f.setTenant('')
    await nextTick()
    expect(window.location.search).toBe('?other=1')
  })

  it('follows the URL on back/forward', () => {
    window.history.replaceState(null, '', '/')
    const f = useFilters()
    window.history.replaceState(null, '', '/?range=6h')
    window.dispatchEvent(new PopStateEvent('popstate'))
    expect(f.range).toBe('6h')
  })
})
