import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The amounts the tray and its notifications print for a budget, with the real server core in the
 * app (Electron faked as in desktop-app.test.ts): a spend and its limit that differ never read the
 * same, as on the dashboard's bars and in Slack alerts (README: The dashboard, Money).
 */
const KEY = 'sk-tray-figures-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
// A rule on a whole key is named by its hint in the tray and notifications, never the key itself.
const HINT = 'sk-…6789'
const fake = appEachTest('burnrate-tray-figures-')

describe('budget amounts in the tray', () => {
  it('a key $0.004 short of its $10.00 block limit reads $9.996 of $10.00, in the menu and the notification', async () => {
    const rules = [{ api_key_pattern: KEY, daily_limit_usd: 10, action: 'block', soft_limit_pct: 0.5 }]
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', budgets: { rules } }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 9.996 }))
    const tray = state.trays[0]
    await eventually(() => /tray-warning\.png$/.test(tray.image.path))
    // Still a warning: its calls go through, so the tray must not say the limit is spent.
    expect(tray.menu!.items[1].label).toBe(`Warning: ${HINT} daily $9.996 of $10.00`)
    expect(tray.tooltip).toContain(`Warning: ${HINT} daily $9.996 of $10.00`)
    // The warning, and the 80% and 90% thresholds the one call passed: each says the amounts apart.
    await eventually(() => state.notifications.length === 3)
    expect(state.notifications.map((n) => n.options.title)).toEqual([`Budget warning: ${HINT}`, `Budget at 80%: ${HINT}`, `Budget at 90%: ${HINT}`])
    for (const n of state.notifications) expect(n.options.body).toMatch(/ has spent \$9\.996 of its \$10\.00 daily limit\. It resets /)
  })
})
