import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray's budget line and the budget notifications gave a window's spend as a plain amount when
 * calls of a model with no known price were counted as $0 in it ('Warning: … daily $0.60 of
 * $1.00'), where the dashboard marks it. They now carry the mark ('$0.60 + 2 unpriced'), and a
 * notification says what it means: from the app's own server (its budgets answer's counts, read
 * every 5 seconds off the proxy's path) and from a headless one it attached to (the answers it
 * polls). Real servers on SQLite, Electron faked.
 */
const KEY = 'sk-tray-unpriced-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const HINT = 'sk-…6789'
const RULES = [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block', soft_limit_pct: 0.5 }]
const unpriced = () => callRecord({ api_key_hash: KEY_HASH, model: 'qwen3-local', cost_usd: 0, priced: false })
const fake = appEachTest('burnrate-tray-budget-unpriced-')
/** The menu's budget line (after today's spend, and its unpriced line when today has such calls). */
const budgetLine = () => state.trays[0].menu?.items.find((i) => /^(Warning|Blocking): /.test(i.label ?? ''))?.label
const launch = () => runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
let upstream: MockUpstream
beforeAll(async () => { upstream = await startMockUpstream() })
afterAll(async () => { await upstream.close() })

describe('budget amounts in the tray with calls of no known price', () => {
  it("marks the own server's budget line and the notification of the limit reached", async () => {
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', budgets: { rules: RULES } }))
    const d = await launch()
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.6 }))
    await eventually(() => budgetLine() === `Warning: ${HINT} daily $0.60 of $1.00`, 30_000)
    d.server!.ledger.record(unpriced())
    d.server!.ledger.record(unpriced())
    await eventually(() => budgetLine() === `Warning: ${HINT} daily $0.60 + 2 unpriced of $1.00`, 30_000)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.5 }))
    await eventually(() => state.notifications.some((n) => n.options.title === `Budget reached: ${HINT}`), 30_000)
    const reached = state.notifications.find((n) => n.options.title === `Budget reached: ${HINT}`)!
    expect(reached.options.body).toContain('reached its $1.00 daily limit ($1.10 + 2 unpriced spent). Calls with no known price count as $0 in it: the real spend is more.')
    await eventually(() => budgetLine() === `Blocking: ${HINT} daily $1.10 + 2 unpriced of $1.00`, 30_000)
  }, 60_000)

  it('marks the budget line and notification of a headless server it attached to', async () => {
    const headless = await startTestServer({ timezone: 'UTC', budgets: { rules: RULES } }, upstream.url)
    try {
      headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 0.6 }))
      headless.server.ledger.record(unpriced())
      await headless.server.ledger.flush()
      const providers: Record<string, unknown> = {}
      for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
      writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: Number(new URL(headless.url).port) }, providers, timezone: 'UTC' }))
      const d = await launch()
      expect(d?.attachedTo).toBe(headless.url)
      await eventually(() => budgetLine() === `Warning: ${HINT} daily $0.60 + 1 unpriced of $1.00`, 30_000)
      await eventually(() => state.notifications.some((n) => n.options.title === `Budget warning: ${HINT}`), 30_000)
      expect(state.notifications.find((n) => n.options.title === `Budget warning: ${HINT}`)!.options.body).toContain('has spent $0.60 + 1 unpriced of its $1.00 daily limit. Calls with no known price count as $0 in it: the real spend is more.')
    } finally {
      await headless.cleanup()
    }
  }, 60_000)
})
