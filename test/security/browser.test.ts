import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { ROOT, ensureRendererBuilt, launchChromium } from '../e2e/browser'
import { lockFromAnotherProcess } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * In a real browser (Debian's Chromium): call data cannot inject HTML or script into the
 * dashboard; a page from another site can neither spend through the proxy, change budgets, nor
 * read the dashboard API; and a database that cannot be written shows on the dashboard.
 */

const TOKEN = 'browser-admin-token-0123456789ab'
const PAYLOADS = {
  agent: '<img src=x onerror="window.__pwned=\'agent\'">agent<b>bold</b>',
  session: '"><svg onload="window.__pwned=\'session\'"></svg><script>window.__pwned=\'session2\'</script>',
  tenant: "<iframe src=\"javascript:parent.__pwned='tenant'\"></iframe>t'en\"ant",
}

let upstream: MockUpstream
let t: TestServer
let browser: Browser
let evil: http.Server
let evilOrigin: string

beforeAll(async () => {
  ensureRendererBuilt()
  // Served from the build, as in production (run from sources, the server would look beside them).
  process.env.BURNRATE_RENDERER_DIR = join(ROOT, 'out/renderer')
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  t = await startTestServer({ admin: { enabled: true, token: TOKEN } }, upstream.url)
  for (let i = 0; i < 3; i++) {
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: 'Bearer sk-xss-test-0000000000001',
      'x-burnrate-agent': PAYLOADS.agent,
      'x-burnrate-session': PAYLOADS.session,
      'x-burnrate-tenant': PAYLOADS.tenant,
    })
    expect(r.status).toBe(200)
  }
  t.server.ledger.flush()
  // A page on another site: http://localhost:<other port> is cross-site to http://127.0.0.1:<port>.
  evil = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end('<!doctype html><title>evil</title><p>hello</p>')
  })
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r))
  evilOrigin = `http://localhost:${(evil.address() as AddressInfo).port}`
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  delete process.env.BURNRATE_RENDERER_DIR
  await browser?.close()
  await new Promise<void>((r) => evil?.close(() => r()))
  await t?.cleanup()
  await upstream?.close()
})

async function openDashboard(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('pageerror', (e) => problems.push(e.message))
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`)
    void d.dismiss()
  })
  await page.goto(`${t.url}/?range=24h`)
  return { page, problems }
}

describe('call data in the dashboard', () => {
  it('agent names, session ids and tenant ids show as text, never as HTML or script', async () => {
    const { page, problems } = await openDashboard()
    try {
      // The payloads arrive and are rendered (as text) somewhere on the page.
      await page.getByText('agent<b>bold</b>', { exact: false }).first().waitFor({ timeout: 30_000 })
      const shown: Record<string, string> = { agent: 'agent<b>bold</b>', session: '<svg onload=', tenant: `t'en"ant` }
      for (const group of ['agent', 'session', 'tenant']) {
        // The breakdown, grouped by each field in turn, lists the payload as its row key.
        const select = page.locator('select').filter({ has: page.locator(`option[value="${group}"]`) }).first()
        const tab = page.getByRole('tab', { name: new RegExp(`^${group}`, 'i') })
        if (await select.count()) await select.selectOption(group)
        else if (await tab.count()) await tab.first().click()
        await page.getByText(shown[group], { exact: false }).first().waitFor({ timeout: 30_000 })
        expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined()
      }
      const body = await page.locator('body').innerText()
      expect(body).toContain('agent<b>bold</b>')
      expect(await page.locator('img[src="x"], iframe, svg[onload], script:not([src])').count()).toBe(0)
      expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined()
      expect(problems).toEqual([])
    } finally {
      await page.close()
    }
  }, 60_000)
})

describe('a page from another site', () => {
  it('cannot spend through the proxy, change budgets, or read the dashboard API', async () => {
    const page = await browser.newPage()
    try {
      await page.goto(evilOrigin)
      const before = upstream.requests.length
      const outcome = await page.evaluate(
        async ({ target, token }) => {
          const out: Record<string, string> = {}
          const attempt = async (name: string, f: () => Promise<Response>) => {
            try {
              const r = await f()
              out[name] = r.type === 'opaque' ? 'opaque' : `read ${r.status}`
            } catch (e) {
              out[name] = `blocked: ${(e as Error).name}`
            }
          }
          // "Simple" requests are sent without a preflight: the server itself must refuse them.
          await attempt('proxy', () => fetch(`${target}/v1/chat/completions`, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }) }))
          await attempt('proxy-cors', () => fetch(`${target}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-stolen-0000000000' }, body: '{}' }))
          await attempt('admin', () => fetch(`${target}/api/admin/budgets/rules`, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ api_key_pattern: '*', daily_limit_usd: 0, action: 'block' }) }))
          await attempt('admin-cors', () => fetch(`${target}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${token}` } }))
          await attempt('dashboard', () => fetch(`${target}/api/dashboard/summary`))
          await attempt('export', () => fetch(`${target}/api/dashboard/export?format=csv`, { credentials: 'include' }))
          return out
        },
        { target: t.url, token: TOKEN },
      )
      // Reading is blocked by the browser (no CORS headers), and what was sent was refused.
      expect(outcome['proxy-cors']).toMatch(/^blocked/)
      expect(outcome['admin-cors']).toMatch(/^blocked/)
      expect(outcome.dashboard).toMatch(/^blocked/)
      expect(outcome.export).toMatch(/^blocked/)
      expect(upstream.requests.length).toBe(before)
      const rules = await request(`${t.url}/api/admin/budgets/rules`, { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(rules.json()).toEqual([])
      t.server.ledger.flush()
      expect((t.server.db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n).toBe(3)
    } finally {
      await page.close()
    }
  }, 60_000)
})

describe('a database that cannot be written', () => {
  it('shows on the dashboard, and clears when the database recovers', async () => {
    const lock = await lockFromAnotherProcess(t.dbFile)
    let released = false
    const { page, problems } = await openDashboard()
    try {
      await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-lock-test-000000000001' })
      await eventually(async () => (await request(`${t.url}/api/health`)).json().ledger.writable === false)
      const banner = page.getByTestId('ledger-degraded')
      await banner.waitFor({ timeout: 30_000 })
      expect(await banner.innerText()).toMatch(/not being saved/i)
      await lock.release()
      released = true
      await banner.waitFor({ state: 'detached', timeout: 30_000 })
      expect(problems).toEqual([])
    } finally {
      if (!released) await lock.release()
      await page.close()
    }
  }, 60_000)
})
