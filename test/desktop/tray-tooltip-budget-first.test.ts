import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { callRecord } from '../../src/main/desktop-logic/test-helpers'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { baseUrlFor } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray's tooltip is cut to the 127 characters Windows shows. Its budget line came last, after
 * today's calls of no known price, the pace and the plan window: with those, a key blocked by its
 * daily limit ("Blocking: sk-…6789 daily $1.10 of $1.00") was cut off the tooltip, while the line
 * pointing at the Unpriced models panel stayed. The budget line now follows today's spend, and what
 * the cut takes is the least of it. A real server in the app (SQLite), Electron faked.
 */
const KEY = 'sk-tray-tooltip-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const fake = appEachTest('burnrate-tray-tooltip-')
const tooltip = () => state.trays[0]?.tooltip ?? ''

let upstream: MockUpstream
beforeAll(async () => {
  // A Claude plan's 5-hour window at 97%, resetting in 3 hours.
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': '0.97',
      'anthropic-ratelimit-unified-5h-reset': String(Math.floor((Date.now() + 3 * 3600_000) / 1000)),
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
})
afterAll(async () => {
  await upstream.close()
})

describe("the tray's tooltip with every line", () => {
  it('keeps a blocking budget in what Windows shows', async () => {
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(
      join(fake.dir, 'config.yaml'),
      stringify({ server: { host: '127.0.0.1', port: 0 }, providers, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block' }] } }),
    )
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    d.server!.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1.1 }))
    for (let i = 0; i < 2; i++) d.server!.ledger.record(callRecord({ model: 'qwen3-local', cost_usd: 0, priced: false }))
    await d.server!.ledger.flush()
    const plan = await postJson(`${d.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], metadata: { user_id: '' } }, {
      authorization: 'Bearer sk-ant-oat01-tray-tooltip-plan-token-aaaa',
      'anthropic-version': '2023-06-01',
    })
    expect(plan.status).toBe(200)
    // Every line there: the menu's budget line and today's unpriced calls, the plan window.
    await eventually(() => (state.trays[0]?.menu?.items ?? []).some((i) => i.label === 'Blocking: sk-…6789 daily $1.10 of $1.00'), 30_000)
    await eventually(() => tooltip().includes('2 calls today have no price'), 30_000)
    await eventually(() => state.trays[0]?.menu !== undefined && tooltip().startsWith('Burnrate: $1.10+ today'), 30_000)
    expect(tooltip().length).toBeLessThanOrEqual(127)
    expect(tooltip().split('\n')).toContain('Blocking: sk-…6789 daily $1.10 of $1.00')
  }, 60_000)
})
