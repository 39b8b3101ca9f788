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
import { freePort } from '../support/postgres'
import { type TestServer, baseUrlFor, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray attached to a headless Burnrate whose dashboard token then changed (its config edited
 * and the server restarted): every request of the tray is refused, and the tray says so ("Today: —
 * (dashboard token refused)"). Its budget line ("Blocking: … daily $1.10 of $1.00", with the red
 * icon) and its plan window ("5h 97%") stayed as last read, for good: days later the tray still
 * said a key was blocked, from a reading it could no longer renew. Real servers on SQLite, Electron faked.
 */
const KEY = 'sk-tray-refused-0123456789'
const KEY_HASH = createHash('sha256').update(KEY).digest('hex')
const HINT = 'sk-…6789'
const RULES = [{ api_key_pattern: KEY, daily_limit_usd: 1, action: 'block' }]
const fake = appEachTest('burnrate-tray-refused-')
const menu = () => (state.trays[0]?.menu?.items ?? []).map((i) => i.label ?? '')
const budgetLine = () => menu().find((l) => /^(Warning|Blocking): /.test(l))
const tooltip = () => state.trays[0]?.tooltip ?? ''

let upstream: MockUpstream
const servers: TestServer[] = []
beforeAll(async () => {
  // The plan's 5-hour window at 97%, resetting in 3 hours.
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
  for (const s of servers) await s.cleanup()
  await upstream.close()
})

describe('the attached tray once the server refuses its dashboard token', () => {
  it('no longer shows the budget and plan state it can no longer read', async () => {
    const port = await freePort()
    const config = (token: string) => ({ timezone: 'UTC', server: { port }, dashboard: { token }, budgets: { rules: RULES } })
    let headless = await startTestServer(config('first-dash-token-0123456789abcdef'), upstream.url)
    servers.push(headless)
    headless.server.ledger.record(callRecord({ api_key_hash: KEY_HASH, cost_usd: 1.1 }))
    await headless.server.ledger.flush()
    const plan = await postJson(`${headless.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], metadata: { user_id: '' } }, {
      authorization: 'Bearer sk-ant-oat01-tray-refused-plan-token-aaaa',
      'anthropic-version': '2023-06-01',
    })
    expect(plan.status).toBe(200)
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port }, providers, timezone: 'UTC', dashboard: { token: 'first-dash-token-0123456789abcdef' } }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    expect(d?.attachedTo).toBe(headless.url)
    await eventually(() => budgetLine() === `Blocking: ${HINT} daily $1.10 of $1.00`, 30_000)
    await eventually(() => tooltip().includes('5h 97%'), 30_000)
    // The server's dashboard token is changed, and it restarts on its data.
    await headless.stop()
    headless = await startTestServer(config('second-dash-token-0123456789abcdef'), upstream.url, headless.dir)
    servers.push(headless)
    await eventually(() => menu()[0] === 'Today: — (dashboard token refused)', 30_000)
    await eventually(() => budgetLine() === undefined && !tooltip().includes('5h 97%'), 10_000)
  }, 90_000)
})
