import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, baseUrlFor, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray attached to a headless Burnrate that then stops answering keeps the budget state it
 * last read ("server not answering" says why it is not renewed). It kept it past the moment that
 * state ends: a key "Blocking" under a daily limit went on reading blocked, with the red icon, the
 * next day and the day after, until the server answered again. A level is now shown only until
 * its window's reset. A rolling window of a few seconds stands in for a day here. Real servers on
 * SQLite, Electron faked.
 */
const KEY = 'sk-tray-reset-passed-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const HINT = 'sk-…6789'
// A 9-second rolling window (0.0025 h) with a $1.00 limit.
const RULES = [{ api_key_pattern: KEY, window_hours: 0.0025, window_limit_usd: 1, action: 'block' }]
const fake = appEachTest('burnrate-tray-reset-passed-')
const budgetLine = () => (state.trays[0]?.menu?.items ?? []).map((i) => i.label ?? '').find((l) => /^(Warning|Blocking): /.test(l))

let upstream: MockUpstream
let headless: TestServer | undefined
beforeAll(async () => {
  upstream = await startMockUpstream()
})
afterAll(async () => {
  await headless?.cleanup()
  await upstream.close()
})

describe('the attached tray while the server does not answer', () => {
  it("stops showing a budget level once its window's reset has passed", async () => {
    headless = await startTestServer({ timezone: 'UTC', budgets: { rules: RULES } }, upstream.url)
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1.1 }))
    await headless.server.ledger.flush()
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: Number(new URL(headless.url).port) }, providers, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    expect(d?.attachedTo).toBe(headless.url)
    await eventually(() => budgetLine() === `Blocking: ${HINT} window $1.10 of $1.00`, 10_000)
    const window = (await request(`${headless.url}/api/dashboard/budgets`)).json().rules[0].windows.find((w: any) => w.period === 'window')
    const resetsAt = Date.parse(window.resets_at)
    expect(resetsAt).toBeGreaterThan(Date.now())
    await headless.stop()
    await eventually(() => state.trays[0].tooltip.startsWith('Burnrate: server not answering'), 10_000)
    // Still blocking until the reset it was read with; after it, no level is claimed.
    await eventually(() => Date.now() > resetsAt + 500, Math.max(0, resetsAt - Date.now()) + 5_000)
    await eventually(() => budgetLine() === undefined, 40_000)
  }, 90_000)
})
