import { join } from 'node:path'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GROUP_BYS } from '../../src/shared/api'
import { NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from '../e2e/browser'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

/** 100,000 calls, each in its own session: every dashboard answer stays small, sums stay whole, the page stays usable. */
const N = 100_000
let t: TestServer
let spend = 0

beforeAll(async () => {
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  t = await startTestServer({ timezone: 'UTC' })
  const now = Date.now()
  for (let i = 0; i < N; i++) {
    const cost = 0.001 + (i % 997) * 1e-6
    spend += cost
    t.server.ledger.record(makeCall({ ts: now - 3_600_000 + Math.floor((i * 3_000_000) / N), session: `sess-${i}`, agent: `agent-${i % 50}`, cost_usd: cost }))
    if (i % 5000 === 4999) t.server.ledger.flush()
  }
  t.server.ledger.flush()
  await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === N, 60_000)
}, 180_000)
afterAll(async () => {
  await t?.cleanup()
  delete process.env.BURNRATE_RENDERER_DIR
})

describe('100,000 distinct sessions', () => {
  it('every dashboard answer is under 1 MB', async () => {
    const paths = [
      '/api/dashboard/summary',
      '/api/dashboard/timeseries?range=24h',
      '/api/dashboard/sessions',
      '/api/dashboard/sessions?limit=1000',
      '/api/dashboard/expensive?range=24h&limit=100',
      '/api/dashboard/stats?range=24h',
      ...GROUP_BYS.map((g) => `/api/dashboard/costs?range=24h&group_by=${g}`),
      ...GROUP_BYS.map((g) => `/api/dashboard/costs?range=24h&group_by=${g}&limit=1000`),
    ]
    for (const p of paths) {
      const res = await request(t.url + p)
      expect(res.status, p).toBe(200)
      expect(res.body.length, p).toBeLessThan(1_000_000)
    }
  }, 120_000)

  it('sessions: the most recent 100 by default, up to 1,000 on request, and how many in all', async () => {
    const def = (await getJson(`${t.url}/api/dashboard/sessions`)).body
    expect(def.sessions).toHaveLength(100)
    expect(def.total).toBe(N)
    expect(def.sessions[0].session).toBe(`sess-${N - 1}`)
    expect((await getJson(`${t.url}/api/dashboard/sessions?limit=1000`)).body.sessions).toHaveLength(1000)
    for (const bad of ['0', '1001', 'x']) {
      const res = await request(`${t.url}/api/dashboard/sessions?limit=${bad}`)
      expect(res.status).toBe(400)
      expect(res.json().error.param).toBe('limit')
    }
  })

  it('costs by session: the top rows and one "other" row, which together still add up to the spend', async () => {
    for (const limit of [100, 1000]) {
      const body = (await getJson(`${t.url}/api/dashboard/costs?range=24h&group_by=session&limit=${limit}`)).body
      expect(body.total_rows).toBe(N)
      expect(body.rows).toHaveLength(limit + 1)
      const other = body.rows[limit]
      expect(other).toMatchObject({ key: '(other)', other: true, requests: N - limit })
      const sum = body.rows.reduce((s: number, r: { cost_usd: number }) => s + r.cost_usd, 0)
      expect(sum).toBeCloseTo(spend, 9)
      expect(body.rows.reduce((s: number, r: { requests: number }) => s + r.requests, 0)).toBe(N)
    }
    // Few groups: no "other" row.
    const models = (await getJson(`${t.url}/api/dashboard/costs?range=24h&group_by=model`)).body
    expect(models.rows.some((r: { other?: boolean }) => r.other)).toBe(false)
    expect(models.total_rows).toBe(models.rows.length)
  })
})

describe.skipIf(NO_BROWSER !== null)('the page with 100,000 sessions, in Chromium', () => {
  let browser: Browser
  let page: Page
  beforeAll(async () => {
    ensureRendererBuilt()
    browser = await launchChromium()
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage()
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
  })

  it('loads with the top rows, answers clicks, and shows more on request', async () => {
    await page.goto(`${t.url}/?range=24h`)
    await expect.poll(() => page.getByTestId('sessions-count').textContent(), { timeout: 30_000 }).toContain('100,000')
    expect(await page.getByTestId('session-row').count()).toBeLessThanOrEqual(100)
    // A click is answered: group the breakdown by session.
    await page.getByTestId('group-by').locator('[data-group="session"]').click({ timeout: 10_000 })
    await expect.poll(() => page.getByTestId('breakdown-other').count(), { timeout: 30_000 }).toBe(1)
    expect(await page.getByTestId('breakdown-row').count()).toBe(101)
    await page.getByTestId('breakdown-more').click({ timeout: 10_000 })
    await expect.poll(() => page.getByTestId('breakdown-row').count(), { timeout: 30_000 }).toBe(1001)
  }, 120_000)
})
