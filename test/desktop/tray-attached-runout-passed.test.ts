import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { silentLogger } from '../../src/main/log'
import { PROVIDER_NAMES } from '../../src/main/providers/registry'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, baseUrlFor, startTestServer } from '../support/server'
import { appEachTest } from './app-each-test'
import { state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))
const { runDesktop } = await import('../../src/main/desktop/app')

/**
 * The tray attached to a headless Burnrate reads the plan windows from its
 * GET /api/dashboard/plans, run-out time included ("5h 90% · resets 17:40 · out at 14:05"). The
 * server draws the pace anew at each answer, so a run-out it gives is never one passed; but once
 * the server stopped answering, the tray kept the last one read and went on saying "out at 14:05"
 * at 14:30 of a window that, for all it knew, stood at 90%: a run-out that has passed is no longer
 * shown. Real servers on SQLite, Electron faked.
 */
const RESET = Math.floor((Date.now() + 3 * 3600_000) / 1000)
let utilization = '0.1'
const fake = appEachTest('burnrate-tray-runout-passed-')
const planLine = () => state.trays[0]?.tooltip.split('\n').find((l) => l.startsWith('5h '))

let upstream: MockUpstream
let headless: TestServer | undefined
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': utilization,
      'anthropic-ratelimit-unified-5h-reset': String(RESET),
      'anthropic-ratelimit-unified-5h-status': 'allowed',
    },
    body: fixture('anthropic/messages-nonstream-basic.json'),
  }))
})
afterAll(async () => {
  await headless?.cleanup()
  await upstream.close()
})

function call(url: string) {
  return postJson(`${url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: 'Bearer sk-ant-oat01-attached-runout-token-aaaa',
    'anthropic-version': '2023-06-01',
  })
}

describe('the attached tray while the server does not answer', () => {
  it("stops showing a plan window's run-out time once it has passed", async () => {
    headless = await startTestServer({ timezone: 'UTC' }, upstream.url)
    const first = Date.now()
    expect((await call(headless.url)).status).toBe(200)
    utilization = '0.9'
    expect((await call(headless.url)).status).toBe(200)
    const providers: Record<string, unknown> = {}
    for (const name of PROVIDER_NAMES) providers[name] = { base_url: baseUrlFor(name, upstream.url) }
    writeFileSync(join(fake.dir, 'config.yaml'), stringify({ server: { host: '127.0.0.1', port: Number(new URL(headless.url).port) }, providers, timezone: 'UTC' }))
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(fake.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home: join(fake.dir, 'home') })
    expect(d?.attachedTo).toBe(headless.url)
    // 10% to 90% in the time since the first call: the pace runs the window out soon.
    await eventually(() => /^5h 90% · resets .* · out at /.test(planLine() ?? ''), 40_000)
    await headless.stop()
    const stopped = Date.now()
    await eventually(() => state.trays[0].tooltip.startsWith('Burnrate: server not answering'), 20_000)
    // The last run-out the tray read: the line from the first reading (10%) through the latest
    // (90%) drawn on to the answer's time, at most the stop, meets 100% an eighth of that time later.
    const runOut = stopped + (stopped - first) / 8
    await eventually(() => Date.now() > runOut + 1000, runOut - Date.now() + 5_000)
    // The window is still shown as last read, without a run-out that has passed.
    await eventually(() => planLine() !== undefined && !planLine()!.includes('out at'), 40_000)
    expect(planLine()).toMatch(/^5h 90% · resets /)
  }, 120_000)
})
