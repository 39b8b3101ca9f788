import { join } from 'node:path'
import type { Browser, BrowserContext, ConsoleMessage, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { formatPct, formatUsd, formatUsdExact } from '../../src/renderer/src/lib/format'
import { startOfDay, startOfMonth } from '../../src/main/time/zone'
import { keyHash, makeCall } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ARTIFACTS, NO_BROWSER, ROOT, ensureRendererBuilt, launchChromium } from './browser'

// The dashboard in Debian's Chromium against the real headless server, with calls seeded
// through the proxy from the recorded provider responses.

const TOKEN = 'e2e-admin-token-0123456789abcdef'
const KEY_A = 'sk-alpha-e2e-000000000001'
const KEY_B = 'sk-ant-e2e-0000000000002'
const EVIL_AGENT = '<img src=x onerror="window.__pwned=1"><b>evil</b>'

let upstream: MockUpstream
let t: TestServer
let browser: Browser
let ctx: BrowserContext
let page: Page
/** Every URL the page asked for, and every console error / page error. */
const requests: string[] = []
const problems: string[] = []

interface Seed {
  path: string
  file: string
  model: string
  key: string
  status?: number
  agent?: string
  session?: string
  tenant?: string
}

const SEEDS: Seed[] = [
  { path: '/v1/chat/completions', file: 'openai-chat/chat-nonstream-cached.json', model: 'gpt-4o-mini', key: KEY_A, agent: EVIL_AGENT, session: 'sess-acme-1', tenant: 'acme' },
  { path: '/v1/responses', file: 'openai-responses/responses-nonstream-cached-reasoning.json', model: 'gpt-5-mini', key: KEY_A, agent: 'codex', session: 'sess-acme-2', tenant: 'acme' },
  { path: '/v1/messages', file: 'anthropic/messages-nonstream-cache-write-and-read.json', model: 'claude-sonnet-4-5', key: KEY_B, agent: 'claude-code', session: 'sess-globex-1', tenant: 'globex' },
  { path: '/v1/messages', file: 'anthropic/messages-nonstream-cache-read.json', model: 'claude-3-5-sonnet', key: KEY_B, agent: 'claude-code', session: 'sess-globex-1', tenant: 'globex' },
  { path: '/v1/chat/completions', file: 'errors/openai-429-rate-limit-tpm.json', model: 'gpt-4o-mini', key: KEY_A, status: 429, agent: 'codex', tenant: 'acme' },
  { path: '/v1/messages', file: 'errors/anthropic-529-overloaded.json', model: 'claude-sonnet-4-5', key: KEY_B, status: 529, agent: 'claude-code', tenant: 'globex' },
]

async function send(s: Seed) {
  upstream.setResponder(() => ({ status: s.status ?? 200, headers: { 'content-type': 'application/json' }, body: fixture(s.file) }))
  const anthropic = s.path === '/v1/messages'
  const headers: Record<string, string> = anthropic ? { 'x-api-key': s.key, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${s.key}` }
  if (s.agent) headers['x-burnrate-agent'] = s.agent
  if (s.session) headers['x-burnrate-session'] = s.session
  if (s.tenant) headers['x-burnrate-tenant'] = s.tenant
  const body = anthropic
    ? { model: s.model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }
    : s.path === '/v1/responses'
      ? { model: s.model, input: 'hi' }
      : { model: s.model, messages: [{ role: 'user', content: 'hi' }] }
  const r = await postJson(t.url + s.path, body, headers)
  expect(r.status).toBe(s.status ?? 200)
}

/** Sums from the real database, the way the contract defines them (periods in UTC here). */
function dbTotals(tenant?: string) {
  const now = Date.now()
  const where = tenant ? ' AND tenant = @tenant' : ''
  const q = (since: number) =>
    t.server.db
      .prepare(`SELECT count(*) AS n, coalesce(sum(cost_usd), 0) AS cost, sum(status >= 400) AS failed FROM calls WHERE ts >= @since${where}`)
      .get({ since, tenant }) as { n: number; cost: number; failed: number }
  return { today: q(startOfDay(now, 'UTC')), month: q(startOfMonth(now, 'UTC')) }
}

const cardValue = (id: string) => page.getByTestId(id).locator('.value')

beforeAll(async () => {
  if (NO_BROWSER) return
  ensureRendererBuilt()
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  upstream = await startMockUpstream()
  t = await startTestServer({ timezone: 'UTC', admin: { enabled: true, token: TOKEN } }, upstream.url)
  for (const s of SEEDS) await send(s)
  // An older call (3 days ago), through the real ledger, so 24h and 7d differ.
  t.server.ledger.record(
    makeCall({ ts: Date.now() - 3 * 86_400_000, provider: 'openai', model: 'gpt-4.1', api_key_hash: keyHash(KEY_A), key_hint: 'sk-…0001', cost_usd: 0.75, tenant: 'acme', agent: 'aider' }),
  )
  t.server.ledger.flush()
  await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === SEEDS.length + 1)

  browser = await launchChromium()
  ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' })
  page = await ctx.newPage()
  page.on('request', (r) => requests.push(r.url()))
  page.on('console', (m: ConsoleMessage) => {
    // Answers such as the 401 of a wrong admin token are logged by Chromium; they are expected.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  await page.goto(`${t.url}/`)
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await t?.cleanup()
  await upstream?.close()
  delete process.env.BURNRATE_RENDERER_DIR
})

describe.skipIf(NO_BROWSER !== null)('the dashboard in Chromium', { timeout: 120_000 }, () => {
  it('shows the right figures on the summary cards', async () => {
    const want = dbTotals()
    expect(want.today.n).toBe(SEEDS.length)
    await expect.poll(() => cardValue('card-requests').textContent()).toBe(String(SEEDS.length))
    expect(await cardValue('card-today').textContent()).toBe(formatUsd(want.today.cost))
    expect(await cardValue('card-month').textContent()).toBe(formatUsd(want.month.cost))
    expect(await cardValue('card-avg').textContent()).toBe(formatUsd(want.today.cost / want.today.n))
    expect(await cardValue('card-errors').textContent()).toBe(formatPct(want.today.failed / want.today.n))
    // Named sessions plus the ones the server infers for calls that send none, active in the last 5 minutes.
    const active = t.server.db
      .prepare(`SELECT count(*) FROM (SELECT DISTINCT tenant, agent, session FROM calls WHERE session != '' AND ts > ?)`)
      .pluck()
      .get(Date.now() - 5 * 60_000) as number
    expect(active).toBeGreaterThanOrEqual(3)
    expect(await cardValue('card-sessions').textContent()).toBe(String(active))
    // The exact amount on hover.
    const title = await cardValue('card-today').locator('.money').getAttribute('title')
    expect(title).toContain(formatUsdExact(want.today.cost))
  })

  it('draws both charts and the provider legend with amounts and shares', async () => {
    const chart = page.getByTestId('cost-chart').locator('canvas')
    await expect.poll(() => chart.evaluate((c: HTMLCanvasElement) => c.width)).toBeGreaterThan(100)
    // Something other than the background was drawn.
    const painted = await chart.evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data
      let n = 0
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++
      return n
    })
    expect(painted).toBeGreaterThan(500)
    const legend = page.getByTestId('provider-legend').locator('li')
    await expect.poll(() => legend.count()).toBe(2)
    const text = (await legend.allTextContents()).join(' ')
    expect(text).toMatch(/OpenAI/)
    expect(text).toMatch(/Anthropic/)
    expect(text).toMatch(/%/)
    expect(await page.getByTestId('provider-chart').locator('canvas').evaluate((c: HTMLCanvasElement) => c.height)).toBeGreaterThan(50)
    // Tokens and requests on a toggle, in the same chart.
    await chart.evaluate((c) => ((c as any).__same = true))
    const totals = t.server.db.prepare('SELECT sum(input_tokens + output_tokens) AS tok, count(*) AS n FROM calls WHERE ts > ?').get(Date.now() - 86_400_000) as { tok: number; n: number }
    await page.getByTestId('metric').getByRole('button', { name: 'Requests' }).click()
    await expect.poll(() => page.getByTestId('chart-total').textContent()).toContain(`${totals.n} requests`)
    await page.getByTestId('metric').getByRole('button', { name: 'Tokens' }).click()
    await expect.poll(() => page.getByTestId('chart-total').textContent()).toMatch(/tokens in the last 24 hours/)
    expect(await chart.evaluate((c) => (c as any).__same)).toBe(true)
    await page.getByTestId('metric').getByRole('button', { name: 'Cost' }).click()
  })

  it('never renders call data as HTML', async () => {
    await page.getByTestId('group-by').locator('[data-group="agent"]').click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group')).toBe('agent')
    const cells = await page.getByTestId('breakdown-table').locator('td.key').allTextContents()
    expect(cells.map((c) => c.trim())).toContain(EVIL_AGENT)
    expect(await page.locator('main img[src="x"]').count()).toBe(0)
    expect(await page.locator('main b', { hasText: 'evil' }).count()).toBe(0)
    expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined()
  })

  it('changes the data with the grouping selector, and keeps it in the URL', async () => {
    await page.getByTestId('group-by').locator('[data-group="model"]').click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group')).toBe('model')
    const models = await page.getByTestId('breakdown-table').locator('td.key').allTextContents()
    expect(models.join(' ')).toContain('gpt-4o-mini')
    await page.getByTestId('group-by').locator('[data-group="session"]').click()
    await expect.poll(() => page.getByTestId('breakdown-table').getAttribute('data-group')).toBe('session')
    const sessions = (await page.getByTestId('breakdown-table').locator('td.key').allTextContents()).map((s) => s.trim())
    expect(sessions).toEqual(expect.arrayContaining(['sess-acme-1', 'sess-acme-2', 'sess-globex-1']))
    expect(new URL(page.url()).searchParams.get('group')).toBe('session')
  })

  it('changes the data with the range selector, and keeps it in the URL', async () => {
    await page.getByTestId('group-by').locator('[data-group="model"]').click()
    const rows = page.getByTestId('breakdown-table').locator('td.key')
    await expect.poll(async () => (await rows.allTextContents()).join('|')).not.toContain('gpt-4.1')
    await page.getByTestId('range').locator('[data-range="7d"]').click()
    await expect.poll(async () => (await rows.allTextContents()).join('|')).toContain('gpt-4.1')
    expect(new URL(page.url()).searchParams.get('range')).toBe('7d')
    await expect.poll(() => page.getByTestId('chart-total').textContent()).toContain('last 7 days')
    // A bookmarked URL opens in the same state.
    const p2 = await ctx.newPage()
    await p2.goto(`${t.url}/?range=30m&group=provider`)
    await expect.poll(() => p2.getByTestId('breakdown-table').getAttribute('data-group')).toBe('provider')
    expect(await p2.getByTestId('range').locator('[aria-pressed="true"]').textContent()).toContain('30m')
    await p2.close()
    await page.getByTestId('range').locator('[data-range="24h"]').click()
  })

  it('filters every view by tenant', async () => {
    await page.getByTestId('tenant').fill('globex')
    await page.getByTestId('tenant').press('Enter')
    const want = dbTotals('globex')
    await expect.poll(() => cardValue('card-requests').textContent()).toBe(String(want.today.n))
    expect(await cardValue('card-today').textContent()).toBe(formatUsd(want.today.cost))
    expect(new URL(page.url()).searchParams.get('tenant')).toBe('globex')
    // The CSV export holds that tenant's calls only.
    const csvUrl = await page.getByTestId('export-csv').getAttribute('href')
    const csv = (await request(new URL(csvUrl!, t.url).toString())).text.trim().split('\n')
    expect(csv.length - 1).toBe(dbTotals('globex').month.n)
    const legend = await page.getByTestId('provider-legend').locator('li').allTextContents()
    expect(legend.join(' ')).not.toMatch(/OpenAI/)
    const sessions = await page.getByTestId('sessions-table').locator('td.key').allTextContents()
    expect(sessions.every((s) => s.includes('globex'))).toBe(true)
    await page.getByTestId('tenant').fill('')
    await page.getByTestId('tenant').press('Enter')
    await expect.poll(() => cardValue('card-requests').textContent()).toBe(String(SEEDS.length))
  })

  it('refreshes by itself without rebuilding the chart', async () => {
    const canvas = page.getByTestId('cost-chart').locator('canvas')
    await canvas.evaluate((c) => ((c as any).__marker = 'kept'))
    await send(SEEDS[0])
    await expect.poll(() => cardValue('card-requests').textContent()).toBe(String(SEEDS.length + 1))
    expect(await canvas.evaluate((c) => (c as any).__marker)).toBe('kept')
  })

  it('is reachable from the keyboard', async () => {
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur())
    await page.evaluate(() => window.scrollTo(0, 0))
    let found = false
    for (let i = 0; i < 40 && !found; i++) {
      await page.keyboard.press('Tab')
      found = await page.evaluate(() => document.activeElement?.getAttribute('data-range') === '1h')
    }
    expect(found).toBe(true)
    await page.keyboard.press('Enter')
    await expect.poll(() => new URL(page.url()).searchParams.get('range')).toBe('1h')
    // The tabs of the connect panel move with the arrow keys.
    await page.locator('#tab-claude-code').focus()
    await page.keyboard.press('ArrowRight')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('tab-codex')
    expect(await page.getByTestId('connect-body').textContent()).toContain(`openai_base_url = "${t.url}/v1"`)
    await page.getByTestId('range').locator('[data-range="24h"]').click()
  })

  it('refuses rule changes without the token and with a wrong one', async () => {
    const rules = page.locator('#rules')
    await expect.poll(() => rules.getByTestId('admin-unlock').count()).toBe(1)
    expect(await rules.getByTestId('rule-form').count()).toBe(0)
    // The server itself refuses a rule without the token, from the page's own origin.
    const status = await page.evaluate(async () => {
      const r = await fetch('/api/admin/budgets/rules', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key_pattern: 'sk-x-*', daily_limit_usd: 1, action: 'block' }),
      })
      return r.status
    })
    expect(status).toBe(401)
    await rules.getByTestId('admin-token').fill('not-the-token')
    await rules.getByRole('button', { name: 'Unlock' }).click()
    await expect.poll(() => rules.getByTestId('admin-error').textContent()).toMatch(/refused/)
    expect(await page.evaluate(() => sessionStorage.getItem('burnrate.adminToken'))).toBe('not-the-token')
    await rules.screenshot({ path: join(ARTIFACTS, 'view-rules-wrong-token-light.png') })
  })

  it('says clearly when the admin API is disabled', async () => {
    const plain = await startTestServer({}, upstream.url)
    try {
      const p = await ctx.newPage()
      await p.goto(`${plain.url}/`)
      await expect.poll(() => p.getByTestId('admin-disabled').count()).toBe(1)
      expect(await p.getByTestId('admin-disabled').textContent()).toMatch(/admin API is disabled.*admin\.enabled: true/)
      expect(await p.getByTestId('admin-token').count()).toBe(0)
      // A new, empty server tells the user what to do next.
      await expect.poll(() => p.getByTestId('getting-started').count()).toBe(1)
      expect(await p.getByTestId('getting-started').textContent()).toContain(plain.url)
      await p.screenshot({ path: join(ARTIFACTS, 'dashboard-empty-light.png'), fullPage: true })
      await p.close()
    } finally {
      await plain.cleanup()
    }
  })

  it('creates and deletes a rule with the token, showing spend against it', async () => {
    const rules = page.locator('#rules')
    await rules.getByTestId('admin-token').fill(TOKEN)
    await rules.getByRole('button', { name: 'Unlock' }).click()
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill('sk-alpha-*')
    await rules.locator('#rf-daily').fill('5')
    await rules.locator('#rf-monthly').fill('100')
    await rules.locator('#rf-action').selectOption('warn')
    await rules.getByRole('button', { name: 'Save rule' }).click()
    const row = rules.locator('[data-testid="rule-row"][data-pattern="sk-alpha-*"]')
    await expect.poll(() => row.count()).toBe(1)
    const stored = (await request(`${t.url}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()
    expect(stored).toEqual([expect.objectContaining({ api_key_pattern: 'sk-alpha-*', daily_limit_usd: 5, monthly_limit_usd: 100, action: 'warn', source: 'runtime' })])
    // Spend of the key under it, as a bar.
    const bar = row.locator('[role="progressbar"]').first()
    expect(Number(await bar.getAttribute('aria-valuenow'))).toBeGreaterThanOrEqual(0)
    expect(await row.textContent()).toContain('$5.00')
    // A bad rule gets the server's message naming the field.
    await rules.getByTestId('new-rule').click()
    await rules.locator('#rf-pattern').fill('sk-*-bad')
    await rules.locator('#rf-daily').fill('1')
    await rules.getByRole('button', { name: 'Save rule' }).click()
    await expect.poll(() => rules.getByTestId('rule-error').textContent()).toMatch(/api_key_pattern|\*/)
    await rules.getByTestId('new-rule').click()
    await page.screenshot({ path: join(ARTIFACTS, 'rules-unlocked-light.png'), fullPage: false })
    await row.getByTestId('delete-rule').click()
    await expect.poll(() => row.count()).toBe(0)
    const after = (await request(`${t.url}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()
    expect(after).toEqual([])
  })

  it('shows a banner when the server is unreachable, and recovers by itself', async () => {
    await page.route('**/api/dashboard/**', (r) => r.abort('connectionrefused'))
    await expect.poll(() => page.getByTestId('unreachable').count()).toBe(1)
    // The last figures stay on screen.
    expect(await cardValue('card-requests').textContent()).toBe(String(SEEDS.length + 1))
    await page.unroute('**/api/dashboard/**')
    await expect.poll(() => page.getByTestId('unreachable').count()).toBe(0)
  })

  it('saves a screenshot of each view in light and dark', async () => {
    const views = ['summary', 'cost-over-time', 'providers', 'breakdown', 'expensive', 'errors', 'sessions', 'api-keys', 'rules', 'connect']
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      await page.waitForTimeout(150) // let the charts pick up the new theme
      await page.evaluate(() => window.scrollTo(0, 0))
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-${scheme}.png`), fullPage: true })
      for (const v of views) {
        const el = v === 'summary' ? page.getByTestId('summary') : page.locator(`#${v}`)
        await el.screenshot({ path: join(ARTIFACTS, `view-${v}-${scheme}.png`) })
      }
    }
    await page.emulateMedia({ colorScheme: 'light' })
    // A narrow, tray-sized window.
    await page.setViewportSize({ width: 420, height: 860 })
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-narrow-light.png'), fullPage: true })
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    expect(overflow).toBeLessThanOrEqual(0)
    await page.setViewportSize({ width: 1440, height: 900 })
  })

  it('made no request to any other host and broke no Content-Security-Policy rule', async () => {
    const origin = new URL(t.url).origin
    expect(requests.length).toBeGreaterThan(10)
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([])
    expect(problems).toEqual([])
  })
})
