import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor, startTestServer } from '../support/server'
import { app, resetElectron, state } from '../desktop/fake-electron'

vi.mock('electron', () => import('../desktop/fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray attached to a headless Burnrate shows that server's "today" (GET /api/dashboard/summary,
 * the server's `timezone`), and its tooltip says where today is heading: "the forecast of the
 * dashboard API, to midnight in `timezone`" (README, The tray). The server's own forecast of the
 * same day is GET /api/dashboard/budgets `overall[daily].projected_usd`. The app's config need not
 * name the server's zone (the server runs from another config, a --timezone flag, or, with none
 * named, the zone of the machine or service it was started under).
 */
let upstream: MockUpstream
let dir: string
beforeAll(async () => { upstream = await startMockUpstream() })
afterAll(async () => { await upstream.close() })
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-desktop-'))
  resetElectron(dir)
})
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  if (!state.exited) {
    app.quit()
    await eventually(() => state.exited)
  }
  for (const c of cleanups.splice(0).reverse()) await c()
  rmSync(dir, { recursive: true, force: true })
})

/**
 * An Etc/GMT zone (UTC+h, at least 4 hours from UTC) whose day is at another stage than UTC's: its
 * local time now between 01:00 and 03:00 (its day just begun), else between 20:00 and 23:00, else 03:00 and 06:00.
 */
function zoneAtAnotherStage(now: number): string {
  const utcHour = new Date(now).getUTCHours()
  for (const [from, to] of [[1, 3], [20, 23], [3, 6]]) {
    for (let h = -12; h <= 14; h++) {
      const local = (((utcHour + h) % 24) + 24) % 24
      if (local >= from && local < to && Math.abs(h) >= 4) return `Etc/GMT${h > 0 ? '-' : '+'}${Math.abs(h)}`
    }
  }
  throw new Error('no zone')
}

describe('the tray attached to a server in another zone', () => {
  it("projects the server's today with the server's day, as the dashboard's forecast does", async () => {
    const tz = zoneAtAnotherStage(Date.now())
    const headless = await startTestServer({ timezone: tz }, upstream.url)
    cleanups.push(() => headless.cleanup())
    headless.server.ledger.record(callRecord({ cost_usd: 5 }))
    await headless.server.ledger.flush()
    // The app's own config: every provider at the mock, the port the headless server holds, its own zone (UTC).
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(join(dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: Number(new URL(headless.url).port) }, providers, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(dir, 'home') })
    expect(d?.attachedTo).toBe(headless.url)
    const tray = () => state.trays[0]
    await eventually(() => tray().tooltip.split('\n')[0] === 'Burnrate: $5.00 today')
    await eventually(() => tray().tooltip.split('\n').length === 2)
    const line = tray().tooltip.split('\n')[1]
    const server = (await request(`${headless.url}/api/dashboard/budgets`)).json() as any
    const projected: number = server.overall.find((o: any) => o.period === 'daily').projected_usd
    // The tray drew its forecast up to a refresh before the server's: a projection moves with the
    // clock (a few cents a second early in the day), so the two agree within 10%, where the app's
    // own day (the bug) is several times off.
    const m = /^On pace for \$([\d,.]+) by midnight$/.exec(line)
    expect(m, line).not.toBeNull()
    const shown = Number(m![1].replace(/,/g, ''))
    expect({ zone: tz, ratio: Math.abs(shown / projected - 1) < 0.1 }).toEqual({ zone: tz, ratio: true })
  }, 60_000)
})
