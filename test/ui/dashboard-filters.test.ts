import { join } from 'node:path'
import type { Browser, BrowserContext, Page, Route } from 'playwright'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { formatUsd, formatUsdExact } from '../../src/renderer/src/lib/format'
import { makeCall } from '../dashboard/seed'
import { NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from '../e2e/browser'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// The dashboard in Debian's Chromium against the real server: what a view shows while the
// tenant filter changes, and how it prints spend rates and budget percentages.

const RATE_KEY = 'sk-rate-ui-000000000001'
const PCT_KEY = 'sk-pct-ui-0000000000001'

let upstream: MockUpstream
let t: TestServer
let browser: Browser
let ctx: BrowserContext | null = null

/** A chat completion reporting this usage, through the proxy, in `session`. */
async function chat(session: string, prompt_tokens: number, completion_tokens: number, key = RATE_KEY) {
  upstream.setResponder(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens } }),
  }))
  const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${key}`, 'x-burnrate-session': session })
  expect(r.status).toBe(200)
}

beforeAll(async () => {
  if (NO_BROWSER) return
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  upstream = await startMockUpstream()
  t = await startTestServer(
    {
      timezone: 'UTC',
      runaway: { spend_rate: { usd_per_minute: 0.000001, action: 'warn' } },
      budgets: { rules: [{ api_key_pattern: 'sk-pct-*', daily_limit_usd: 100, action: 'warn' }] },
    },
    upstream.url,
  )
  const record = (over: Parameters<typeof makeCall>[0]) => t.server.ledger.record(makeCall(over))
  record({ tenant: 'acme', cost_usd: 12.344, model: 'acme-private-model', priced: false })
  record({ tenant: 'globex', cost_usd: 0.5, model: 'globex-private-model', priced: false })
  t.server.ledger.flush()
  await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 2)
  browser = await launchChromium()
}, 120_000)

afterEach(async () => {
  await ctx?.close()
  ctx = null
})

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await upstream?.close()
  delete process.env.BURNRATE_RENDERER_DIR
})

async function openPage(path: string): Promise<Page> {
  ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } })
  const page = await ctx.newPage()
  await page.goto(`${t.url}${path}`)
  return page
}

async function setTenant(page: Page, tenant: string) {
  await page.getByTestId('tenant').fill(tenant)
  await page.getByTestId('tenant').press('Enter')
}

// (Each tenant's call is of a model with no price: its card says so beside the amount, of that tenant's calls alone.)
const todayCard = (page: Page) => page.getByTestId('card-today').locator('.value')

describe.skipIf(NO_BROWSER !== null)('the dashboard after a tenant change', { timeout: 60_000 }, () => {
  it("does not keep showing the old tenant's spend when the new tenant's summary fails", async () => {
    const page = await openPage('/?tenant=acme')
    // The server fails globex's summary (the ledger could not be read, say); every other answer is real.
    await page.route(
      (u) => u.pathname === '/api/dashboard/summary' && u.searchParams.get('tenant') === 'globex',
      (r: Route) => r.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { type: 'internal', message: 'The ledger could not be read.' } }) }),
    )
    await expect.poll(() => todayCard(page).textContent()).toBe('$12.34 + 1 unpriced')
    await setTenant(page, 'globex')
    await expect.poll(() => page.getByTestId('summary').textContent()).toContain('The ledger could not be read.')
    expect((await todayCard(page).textContent())?.trim()).toBe('—')
    // Other sections did answer for globex.
    await expect.poll(() => page.locator('#expensive').textContent()).toContain('globex-private-model')
  })

  it("shows a placeholder, not the old tenant's figures, while the new tenant's answers are on the way", async () => {
    const page = await openPage('/?tenant=acme')
    await expect.poll(() => todayCard(page).textContent()).toBe('$12.34 + 1 unpriced')
    await expect.poll(() => page.locator('#expensive').textContent()).toContain('acme-private-model')
    // globex's answers are held until the checks below are done.
    let release: () => void = () => {}
    const held = new Promise<void>((r) => (release = r))
    let waiting = 0
    await page.route(
      (u) => u.pathname.startsWith('/api/dashboard/') && u.searchParams.get('tenant') === 'globex',
      async (r: Route) => {
        waiting++
        await held
        await r.continue()
      },
    )
    await setTenant(page, 'globex')
    await expect.poll(() => waiting).toBeGreaterThanOrEqual(2)
    expect(await todayCard(page).locator('.skeleton').count()).toBe(1)
    expect(await todayCard(page).textContent()).not.toContain('$12.34')
    expect(await page.locator('#expensive').innerText()).not.toContain('acme-private-model')
    expect(await page.locator('#expensive [data-testid="panel-stale"]').count()).toBe(1)
    // What is on screen (innerText leaves hidden elements out).
    expect(await page.locator('#unpriced').innerText()).not.toContain('acme-private-model')
    expect(await page.locator('#unpriced [data-testid="panel-stale"]').count()).toBe(1)
    release()
    await expect.poll(() => todayCard(page).textContent()).toBe('$0.50 + 1 unpriced')
    await expect.poll(() => page.locator('#expensive').textContent()).toContain('globex-private-model')
  })

  it('lists only the filtered tenant’s unpriced models', async () => {
    const page = await openPage('/?tenant=acme')
    const unpriced = page.getByTestId('unpriced-row')
    await expect.poll(() => unpriced.allTextContents()).toEqual([expect.stringContaining('acme-private-model')])
    await setTenant(page, 'globex')
    await expect.poll(() => unpriced.allTextContents()).toEqual([expect.stringContaining('globex-private-model')])
    await setTenant(page, '')
    await expect.poll(() => unpriced.count()).toBe(2)
  })
})

describe.skipIf(NO_BROWSER !== null)('amounts and percentages in the dashboard', { timeout: 60_000 }, () => {
  it('prints runaway spend rates as money, with the exact figure on hover', async () => {
    // Session "tiny" spends $0.0039 in a minute, session "large" over $1,000 (gpt-4o-mini at $0.15 / $0.60 per million).
    await chat('tiny', 10_000, 4_000)
    await chat('tiny', 1, 1)
    await chat('large', 8_000_000_000, 0)
    await chat('large', 1, 1)
    const marks = (await request(`${t.url}/api/dashboard/alerts`)).json().runaway as { session: string; usd_last_minute: number }[]
    const rate = (s: string) => marks.find((m) => m.session === s)!.usd_last_minute
    expect(rate('tiny')).toBeGreaterThan(0)
    expect(rate('tiny')).toBeLessThan(0.005)
    expect(rate('large')).toBeGreaterThan(1000)

    const page = await openPage('/')
    for (const s of ['tiny', 'large']) {
      const money = page.getByTestId('runaway-row').filter({ hasText: s }).first().locator('.money')
      await expect.poll(() => money.textContent()).toBe(formatUsd(rate(s)))
      expect(await money.getAttribute('title')).toBe(`${formatUsdExact(rate(s))} exactly`)
    }
    const tiny = await page.getByTestId('runaway-row').filter({ hasText: 'tiny' }).first().textContent()
    expect(tiny).not.toContain('$0.00 in one minute')
    // Grouped, every digit: not "$1200000.00".
    expect(formatUsdExact(rate('large'))).toMatch(/^\$\d{1,3}(,\d{3})+\.\d+$/)
  })

  it('does not show a key under its daily limit at 100%', async () => {
    // $99.60 of the $100 daily limit (664M input tokens at $0.15 per million): under it.
    await chat('budget', 664_000_000, 0, PCT_KEY)
    const page = await openPage('/')
    const bar = page.locator('#budget-forecast .limit[title*="daily"]').first()
    await expect.poll(() => bar.getAttribute('title')).toMatch(/^\$99\.6\d* of \$100\.00 daily/)
    await expect.poll(() => bar.getAttribute('data-level')).toBe('warn')
    expect(await bar.locator('.pct').textContent()).toBe('99.6%')
    // A screen reader hears the same share, not the bar's value rounded to a whole 100.
    const meter = bar.getByRole('progressbar')
    expect(await meter.getAttribute('aria-valuetext')).toBe('99.6%')
    expect(Number(await meter.getAttribute('aria-valuenow'))).toBeLessThan(100)
  })
})
