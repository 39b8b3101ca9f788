import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { appEachTest } from './app-each-test'
import { app, resetElectron, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * A rolling window's budget notice across a restart (the real server core, Electron faked as in
 * desktop-app.test.ts): the window's reset moves with its calls, and a level still standing after
 * a restart is the crossing already told, not a new one.
 */
const KEY = 'sk-window-notices-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const fake = appEachTest('burnrate-window-notices-')

async function launch() {
  const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
  if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
  return d
}

describe('a rolling window budget notice', () => {
  it('is told once per crossing: calls after it move the reset, and a restart does not tell it again', async () => {
    const rules = [{ api_key_pattern: KEY, window_hours: 1, window_limit_usd: 1, action: 'warn', alert_at_pct: [1] }]
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', budgets: { rules } }))
    const d = await launch()
    const now = Date.now()
    // Over the window's limit half an hour ago: a warn rule warns, and its calls go on.
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1.2, ts: now - 30 * 60_000 }))
    await eventually(() => state.trays[0].image.path.endsWith('tray-warning.png'))
    await eventually(() => state.notifications.length === 1)
    expect(state.notifications[0].options.title).toMatch(/^Budget warning: /)
    // Another call keeps the window over its limit past the first call's hour: its reset moves on.
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1, ts: now }))
    d.server!.ledger.flush()
    await eventually(() => d.server!.context.budgets!.alerts().some((a) => a.spent_usd > 2))
    expect(state.notifications).toHaveLength(1)

    app.quit()
    await eventually(() => state.exited)
    resetElectron(fake.dir)
    await launch()
    // The same crossing, still standing: the icon stays amber, no second notification.
    expect(state.trays[0].image.path.endsWith('tray-warning.png')).toBe(true)
    expect(state.notifications).toHaveLength(0)
  }, 60_000)
})
