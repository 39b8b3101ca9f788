import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { modelEchoUpstream } from '../support/model-echo'
import { baseUrlFor } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The desktop notification of a session spending faster than `runaway.spend_rate.usd_per_minute`
 * gave both amounts to the cent: a session past an alarm of $0.0003 a minute "spent <$0.01 in the
 * last minute (alarm above <$0.01/minute)", one just past $0.50 "$0.50 … (alarm above $0.50/minute)",
 * an alarm that reads as if nothing had passed it. The two read differently whenever they differ,
 * as a budget's spend and limit do. A real server in the app (SQLite), a mock upstream, Electron faked.
 */
const fake = appEachTest('burnrate-runaway-amounts-')
let upstream: MockUpstream
beforeAll(async () => {
  // gpt-4o-mini, 1,200 prompt and 300 completion tokens: $0.00036 a call.
  upstream = await startMockUpstream(modelEchoUpstream('chatcmpl-runaway-amounts'))
})
afterAll(async () => {
  await upstream.close()
})

describe("a spend-rate notification's amounts", () => {
  it('say how much the session spent and the alarm it passed, each as it differs from the other', async () => {
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(
      join(fake.dir, 'config.yaml'),
      stringify({ server: { host: '127.0.0.1', port: 0 }, providers, timezone: 'UTC', runaway: { spend_rate: { action: 'warn', usd_per_minute: 0.0003 } } }),
    )
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    const call = () =>
      postJson(`${d.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer sk-runaway-amounts-0123456789',
        'x-burnrate-session': 'fast-session',
        'x-burnrate-agent': 'script',
      })
    expect((await call()).status).toBe(200)
    // The session's $0.00036 of the last minute is past the alarm: the next call trips it.
    await eventually(async () => (await call()).headers['x-burnrate-runaway-warning'] !== undefined, 10_000)
    await eventually(() => state.notifications.some((n) => n.options.title === 'Agent spending fast: script'), 10_000)
    const n = state.notifications.find((x) => x.options.title === 'Agent spending fast: script')!
    expect(n.options.body).toMatch(/^script \(session fast-session\) spent \$0\.00036 in the last minute \(alarm above \$0\.0003\/minute\)\./)
  }, 60_000)
})
