import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHash, makeCall, rng } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ARTIFACTS, NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from './browser'

// The README screenshot: the dashboard with a realistic day of spend. Written to test/artifacts
// on every run; copied to resources/screenshot-dashboard.png with BURNRATE_UPDATE_SCREENSHOT=1.

const TOKEN = 'screenshot-admin-token-0123456789'
const KEYS = ['sk-proj-team-a-7f3a9c21', 'sk-ant-api03-dev-b41e', 'sk-proj-ci-runner-09d2']
const MODELS = [
  { provider: 'anthropic', model: 'claude-sonnet-4-5', cost: 0.06, w: 5, agent: 'claude-code' },
  { provider: 'openai', model: 'gpt-5', cost: 0.035, w: 3, agent: 'codex' },
  { provider: 'openai', model: 'gpt-4o-mini', cost: 0.0009, w: 4, agent: 'aider' },
  { provider: 'google', model: 'gemini-2.5-pro', cost: 0.02, w: 2, agent: 'research-bot' },
  { provider: 'anthropic', model: 'claude-haiku-4-5', cost: 0.004, w: 3, agent: 'triage-bot' },
]

let t: TestServer
let upstream: MockUpstream
let browser: Browser

/**
 * A fixed-offset zone (`Etc/GMT-5` is UTC+5) in which it is between 23:00 and midnight right
 * now, so that "today" holds nearly all of the last 24 hours seeded below whatever the hour in
 * UTC: the CI key's spend today is over its $5 limit at any time of day.
 */
function lateEveningZone(now: number): { zone: string; offsetHours: number } {
  const h = new Date(now).getUTCHours()
  const offsetHours = h >= 9 ? 23 - h : -1 - h // within Etc/GMT's -12..+14
  return { zone: offsetHours === 0 ? 'UTC' : `Etc/GMT${offsetHours > 0 ? '-' : '+'}${Math.abs(offsetHours)}`, offsetHours }
}

beforeAll(async () => {
  if (NO_BROWSER) return
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  const now = Date.now()
  const { zone, offsetHours } = lateEveningZone(now)
  t = await startTestServer({ timezone: zone, admin: { enabled: true, token: TOKEN } }, upstream.url)
  const r = rng(7)
  const bag = MODELS.flatMap((m) => Array<typeof m>(m.w).fill(m))
  let n = 0
  for (let i = 0; i < 900; i++) {
    const ago = Math.floor(r() ** 1.6 * 24 * 3_600_000) + 2_000
    const hour = new Date(now - ago + offsetHours * 3_600_000).getUTCHours()
    if ((hour < 7 || hour > 21) && r() < 0.7) continue // quieter at night
    const m = bag[Math.floor(r() * bag.length)]
    const k = Math.floor(r() * KEYS.length)
    const roll = r()
    const status = roll < 0.02 ? 429 : roll < 0.03 ? 529 : 200
    const input = Math.floor(2_000 + r() * 30_000)
    t.server.ledger.record(
      makeCall({
        ts: now - ago,
        provider: m.provider,
        model: m.model,
        api_key_hash: keyHash(KEYS[k]),
        key_hint: `${KEYS[k].slice(0, 3)}…${KEYS[k].slice(-4)}`,
        tenant: ['acme', 'globex', 'acme', ''][k % 4],
        agent: m.agent,
        session: `${m.agent}-${(Math.floor((now - ago) / 10_800_000) * 7919 + k * 104729).toString(36)}`,
        status,
        input_tokens: input,
        cache_read_tokens: Math.floor(input * r() * 0.7),
        output_tokens: Math.floor(100 + r() * 3_000),
        cost_usd: status === 200 ? m.cost * (0.3 + r() * 1.7) : 0,
        latency_ms: status === 200 ? 400 + r() * 9_000 : 30 + r() * 200,
      }),
    )
    n++
  }
  t.server.ledger.flush()
  await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === n)
  const rule = (body: unknown) => postJson(`${t.url}/api/admin/budgets/rules`, body, { authorization: `Bearer ${TOKEN}` })
  expect((await rule({ api_key_pattern: 'sk-proj-*', daily_limit_usd: 25, monthly_limit_usd: 400, action: 'block', soft_limit_pct: 0.8 })).status).toBe(201)
  expect((await rule({ api_key_pattern: 'sk-ant-*', daily_limit_usd: 10, action: 'warn' })).status).toBe(201)
  // One call per key through the proxy, so the server ties each key to its effective rule.
  for (const key of KEYS) {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${key}`, 'x-burnrate-agent': 'codex' })
    expect(r.status).toBe(200)
  }
  // Made after those calls: the CI key has already spent more than this today.
  expect((await rule({ api_key_pattern: 'sk-proj-ci-*', daily_limit_usd: 5, action: 'block' })).status).toBe(201)
  const refused = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEYS[2]}` })
  expect(refused.status).toBe(429)
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await upstream?.close()
  delete process.env.BURNRATE_RENDERER_DIR
})

describe.skipIf(NO_BROWSER !== null)('README screenshot', { timeout: 120_000 }, () => {
  for (const scheme of ['light', 'dark'] as const) {
    it(`renders a realistic day (${scheme})`, async () => {
      const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: scheme })
      await ctx.addInitScript((token) => sessionStorage.setItem('burnrate.adminToken', token), TOKEN)
      const page = await ctx.newPage()
      const errors: string[] = []
      page.on('pageerror', (e) => errors.push(String(e)))
      await page.goto(`${t.url}/`)
      await expect.poll(() => page.getByTestId('rule-row').count()).toBe(3)
      // The CI key spent more than its $5 daily limit: the page says it is blocked.
      await expect.poll(() => page.getByTestId('budget-alerts').textContent()).toMatch(/blocked.*sk-…09d2 reached its daily limit under sk-proj-ci-\*/)
      await expect.poll(() => page.getByTestId('breakdown-row').count()).toBe(MODELS.length + 1) // + the fixture's dated gpt-4o-mini
      await page.waitForTimeout(300)
      const file = join(ARTIFACTS, `readme-dashboard-${scheme}.png`)
      await page.screenshot({ path: file, fullPage: true })
      if (scheme === 'light' && process.env.BURNRATE_UPDATE_SCREENSHOT === '1') {
        copyFileSync(file, join(ROOT, 'resources/screenshot-dashboard.png'))
      }
      expect(errors).toEqual([])
      await ctx.close()
    })
  }
})
