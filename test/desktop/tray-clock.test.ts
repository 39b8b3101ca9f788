import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { app, resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray against the machine's clock (the real server core, Electron faked as in
 * desktop-app.test.ts): a laptop's wall clock can be set back (a wake from sleep whose clock was
 * wrong, corrected by NTP; a change by hand), and the tray must keep updating all the same.
 */
let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-tray-clock-'))
  resetElectron(dir)
})
afterEach(async () => {
  vi.restoreAllMocks()
  if (!state.exited) {
    app.quit()
    await eventually(() => state.exited)
  }
  rmSync(dir, { recursive: true, force: true })
})

/** A fixed-offset zone in which it is about noon now, so an hour back is still today. */
function noonZone(): string {
  const off = 12 - new Date().getUTCHours()
  return off === 0 ? 'UTC' : `Etc/GMT${off > 0 ? '-' : '+'}${Math.abs(off)}`
}

describe('the tray when the clock is set back', () => {
  it('still shows the next call within about a second, not once the clock has caught up', async () => {
    writeFileSync(join(dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: noonZone() }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    const tray = state.trays[0]
    d.server!.ledger.record(callRecord({ cost_usd: 1 }))
    await eventually(() => tray.tooltip.split('\n')[0] === 'Burnrate: $1.00 today')

    // The wall clock goes back an hour (still the same day in the config's zone).
    const wall = Date.now.bind(Date)
    vi.spyOn(Date, 'now').mockImplementation(() => wall() - 3_600_000)
    d.server!.ledger.record(callRecord({ cost_usd: 2 }))
    expect(d.server!.ledger.spend.totals().day).toBe(3)
    await eventually(() => tray.tooltip.split('\n')[0] === 'Burnrate: $3.00 today')
  }, 60_000)
})
