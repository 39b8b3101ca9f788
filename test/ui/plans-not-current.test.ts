import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium, openPage, serveBuiltRenderer } from '../e2e/browser'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { freePort } from '../support/postgres'
import { type TestServer, startTestServer } from '../support/server'

// The Plan windows panel loads after each refresh of the page that the server answered with
// figures. Two ways that never came, and the panel went on showing its last answer as current:
// - the server stopped answering: the countdown stood still ("resets in 2m" long after the
//   window reset) beside the old share, and a window past its reset still read as full;
// - Burnrate restarted with a dashboard token (its sessions end with it, and its plan windows,
//   held in memory, are gone): every other panel gives way to its placeholder while the page asks
//   for the token; the plan windows (and the unpriced models) stayed, as if read just now.

const TOKEN = 'plans-stale-dash-token-0123456789abcd'
let upstream: MockUpstream
let browser: Browser
let unserve: (() => void) | undefined
const servers: TestServer[] = []

async function claudeCall(t: TestServer, model = 'claude-sonnet-4-5'): Promise<void> {
  const res = await postJson(`${t.url}/v1/messages`, { model, max_tokens: 10, messages: [], metadata: { user_id: '' } }, {
    authorization: 'Bearer sk-ant-oat01-plans-stale-plan-token-aaaa',
    'anthropic-version': '2023-06-01',
  })
  expect(res.status).toBe(200)
}

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  // Each answer reports the 5-hour window at 97%, resetting 90 seconds after it is read.
  // (Answered for the model asked: a priced one, or one no price knows.)
  upstream = await startMockUpstream((req) => ({
    status: 200,
    headers: {
      'content-type': 'application/json',
      'anthropic-ratelimit-unified-5h-utilization': '0.97',
      'anthropic-ratelimit-unified-5h-reset': String(Math.floor((Date.now() + 90_000) / 1000)),
    },
    body: JSON.stringify({ ...JSON.parse(fixture('anthropic/messages-nonstream-basic.json').toString()), model: JSON.parse(req.body.toString()).model }),
  }))
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  for (const t of servers) await t.cleanup()
  await upstream?.close()
  unserve?.()
})

const windowText = async (page: Page) => (await page.getByTestId('plan-window').first().innerText()).replace(/\s+/g, ' ').trim()

describe.skipIf(NO_BROWSER !== null)('the plan windows when no refresh lands', { timeout: 120_000 }, () => {
  it('count down, and show a window past its reset as reset, while the server does not answer', async () => {
    const t = await startTestServer({ timezone: 'UTC' }, upstream.url)
    servers.push(t)
    await claudeCall(t)
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } })
    const page = await ctx.newPage()
    // The page's clock runs as the real one until moved on below.
    await page.clock.install()
    await page.goto(`${t.url}/`)
    await expect.poll(() => windowText(page)).toMatch(/^5h 97% resets in 2m/)
    await t.stop()
    await expect.poll(() => page.getByTestId('unreachable').count()).toBe(1)
    // Two minutes later, with no answer since: the window's reset has passed.
    await page.clock.fastForward('02:00')
    await expect.poll(() => windowText(page)).toMatch(/resetting/)
    expect(await windowText(page)).not.toContain('97%')
    await ctx.close()
  })

  it('give way, as the other panels do, when a restarted server refuses the page until the token is given again', async () => {
    let t = await startTestServer({ timezone: 'UTC', server: { port: await freePort() }, dashboard: { token: TOKEN } }, upstream.url)
    servers.push(t)
    await claudeCall(t)
    // And a call of a model with no known price, for the Unpriced models panel.
    await claudeCall(t, 'claude-not-a-priced-model-9')
    const page = await openPage(browser, `${t.url}/?token=${TOKEN}`)
    await expect.poll(() => windowText(page)).toMatch(/^5h 97%/)
    await expect.poll(() => page.getByTestId('unpriced-row').count()).toBe(1)
    t = await t.restart()
    servers.push(t)
    await expect.poll(() => page.getByTestId('needs-token').count()).toBe(1)
    // (A panel's body is hidden, not removed, under its error.)
    await expect.poll(() => page.locator('#plans .panel-body').isVisible()).toBe(false)
    expect(await page.locator('#plans').getByTestId('plan-window').first().isVisible()).toBe(false)
    await expect.poll(() => page.locator('#unpriced .panel-body').isVisible()).toBe(false)
    await page.context().close()
  })
})
