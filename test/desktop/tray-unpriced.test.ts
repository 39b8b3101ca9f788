import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * Today's spend in the tray when some of today's calls are of a model with no known price (recorded
 * at $0, priced false): the amount is marked as a lower bound ("$1.20+") and a menu line says how
 * many calls have no price, as the dashboard's *Spend today* says "+ 2 unpriced" (README: The tray).
 * Both sources of the tray's figures: the app's own server, and a headless one it attached to
 * (GET /api/dashboard/summary's today_unpriced_requests).
 */
const LINE = "2 calls today have no price: see the dashboard's Unpriced models"
const unpriced = () => callRecord({ model: 'qwen3-local', cost_usd: 0, priced: false })
const fake = appEachTest('burnrate-tray-unpriced-')
let upstream: MockUpstream
beforeAll(async () => { upstream = await startMockUpstream() })
afterAll(async () => { await upstream.close() })

describe("the tray's today with calls of no known price", () => {
  it("marks the app's own server's spend", async () => {
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    d.server!.ledger.record(callRecord({ cost_usd: 1.2 }))
    d.server!.ledger.record(unpriced())
    d.server!.ledger.record(unpriced())
    const tray = state.trays[0]
    await eventually(() => tray.menu?.items[1]?.label === LINE, 30_000)
    expect(tray.menu!.items[0].label).toBe('Today: $1.20+')
    expect(tray.tooltip.split('\n').slice(0, 2)).toEqual(['Burnrate: $1.20+ today', LINE])
    // The dashboard's summary counts the same calls.
    expect((await request(`${d.url}/api/dashboard/summary`)).json()).toMatchObject({ today_spend_usd: 1.2, today_unpriced_requests: 2 })
  }, 60_000)

  it('marks the spend of a headless server it attached to, read over HTTP', async () => {
    const headless = await startTestServer({ timezone: 'UTC' }, upstream.url)
    try {
      headless.server.ledger.record(unpriced())
      headless.server.ledger.record(unpriced())
      await headless.server.ledger.flush()
      const providers: Record<string, unknown> = {}
      for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
      writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: Number(new URL(headless.url).port) }, providers, timezone: 'UTC' }))
      const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
      expect(d?.attachedTo).toBe(headless.url)
      const tray = state.trays[0]
      // Nothing priced: "$0.00+", never a plain "$0.00" that reads as nothing spent.
      await eventually(() => tray.menu?.items[0]?.label === 'Today: $0.00+', 30_000)
      expect(tray.menu!.items[1].label).toBe(LINE)
      expect(tray.tooltip.split('\n').slice(0, 2)).toEqual(['Burnrate: $0.00+ today', LINE])
    } finally {
      await headless.cleanup()
    }
  }, 60_000)
})
