// @vitest-environment happy-dom
import { mount } from '@vue/test-utils'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { nextTick } from 'vue'
import { fakeServer, flush } from '../testing/fake-server'
import LedgerHealth from './LedgerHealth.vue'

afterEach(() => {
  vi.unstubAllGlobals()
})

const ok = { writable: true, pending: 0, dropped: 0, overflowed: 0, left_on_disk: 0, last_error: null }

async function banner(ledger: Record<string, unknown>) {
  fakeServer({ 'GET /api/health': () => ({ body: { status: 'ok', ledger } }) })
  const w = mount(LedgerHealth, { props: { everyMs: 60_000 } })
  await flush()
  await nextTick()
  return w
}

describe('LedgerHealth', () => {
  it('shows nothing while every call is saved', async () => {
    const w = await banner(ok)
    expect(w.find('[data-testid="ledger-degraded"]').exists()).toBe(false)
    w.unmount()
  })

  it('says calls kept on disk past ledger.max_pending are not lost, and when they are saved', async () => {
    const w = await banner({ ...ok, left_on_disk: 3 })
    const text = w.get('[data-testid="ledger-left-on-disk"]').text()
    expect(text).toContain('3 calls are kept on disk, not lost')
    expect(text).toContain("set aside in a file in Burnrate's data folder")
    expect(text).toContain('next start')
    // Not counted as lost, and not the "not saved" wording of dropped calls.
    expect(w.text()).not.toContain('not saved')
    w.unmount()
  })

  it('says one call in the singular, beside the calls dropped and the database still unwritable', async () => {
    const w = await banner({ writable: false, pending: 5, dropped: 2, left_on_disk: 1, last_error: 'SQLITE_BUSY: database is locked' })
    expect(w.get('[data-testid="ledger-left-on-disk"]').text()).toContain('1 call is kept on disk, not lost')
    expect(w.text()).toContain('2 calls were not saved')
    expect(w.text()).toContain('5 calls wait in memory')
    w.unmount()
  })

  it('says why calls were not saved: past ledger.max_pending, or refused by the database (not the bound: raising it would not help)', async () => {
    const w = await banner({ ...ok, dropped: 3, overflowed: 2 })
    expect(w.get('[data-testid="ledger-overflowed"]').text()).toContain('2 calls were not saved: more calls waited than ledger.max_pending')
    const refused = w.get('[data-testid="ledger-refused"]').text()
    expect(refused).toContain('1 call was not saved: the database refused it')
    expect(refused).not.toContain('max_pending')
    w.unmount()
    const only = await banner({ ...ok, dropped: 1, overflowed: 0 })
    expect(only.text()).not.toContain('max_pending')
    expect(only.find('[data-testid="ledger-overflowed"]').exists()).toBe(false)
    only.unmount()
  })

  it('reads a server from before overflowed (the field absent) without naming a reason', async () => {
    const { overflowed: _, ...old } = ok
    const w = await banner({ ...old, dropped: 2 })
    expect(w.text()).toContain('2 calls were not saved')
    expect(w.text()).not.toContain('max_pending')
    w.unmount()
  })

  it('reads a server from before left_on_disk (the field absent) as none', async () => {
    const { left_on_disk: _, ...old } = ok
    const w = await banner({ ...old, dropped: 1 })
    expect(w.find('[data-testid="ledger-left-on-disk"]').exists()).toBe(false)
    expect(w.text()).toContain('1 call was not saved')
    w.unmount()
  })
})
