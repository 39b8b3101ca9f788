import type { Browser } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium } from '../e2e/browser'
import { type Reply, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A browser without a session that opens a dashboard address (a bookmark with its filters,
 * `/?range=7d&tenant=acme`) gets the login page there; logging in takes it back to that address,
 * not to `/` with its filters dropped. Only ever to a path of this server: the form's `next` is
 * the browser's to send, so a page may post any, and no login may lead to another site.
 */
const TOKEN = 'login-keeps-address-token-0123456789'
let s: TestServer

beforeAll(async () => {
  s = await startTestServer({ dashboard: { token: TOKEN } })
})
afterAll(async () => {
  await s.cleanup()
})

function postLogin(fields: Record<string, string>): Promise<Reply> {
  return request(`${s.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', origin: s.url, 'sec-fetch-site': 'same-origin' },
    body: new URLSearchParams(fields).toString(),
  })
}

/** The form's hidden `next`, as a browser would post it (null when the form has none). */
function nextOf(page: Reply): string | null {
  const m = /<input type="hidden" name="next" value="([^"]*)"/.exec(page.text)
  return m ? m[1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&') : null
}

describe('logging in at a dashboard address', () => {
  it('goes back to that address, its path and query kept', async () => {
    const page = await request(`${s.url}/?range=7d&tenant=acme`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(401)
    const next = nextOf(page)
    expect(next).toBe('/?range=7d&tenant=acme')
    const res = await postLogin({ token: TOKEN, next: next! })
    expect(res.status).toBe(303)
    expect(res.headers.location).toBe('/?range=7d&tenant=acme')
  })

  it('keeps it through a wrong token first (the form shown again holds it)', async () => {
    const wrong = await postLogin({ token: `${TOKEN}-wrong`, next: '/?range=30d' })
    expect(wrong.status).toBe(401)
    expect(nextOf(wrong)).toBe('/?range=30d')
    expect((await postLogin({ token: TOKEN, next: nextOf(wrong)! })).headers.location).toBe('/?range=30d')
  })

  it('leaves a token sent in the address out of where it goes back to', async () => {
    const page = await request(`${s.url}/?range=7d&token=not-the-token`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(401)
    expect(nextOf(page)).toBe('/?range=7d')
  })

  it('goes to / from the plain login page, or without a next', async () => {
    const page = await request(`${s.url}/login`, { headers: { accept: 'text/html' } })
    expect(nextOf(page) ?? '/').toBe('/')
    expect((await postLogin({ token: TOKEN })).headers.location).toBe('/')
  })

  for (const next of [
    '//evil.example/',
    '/\\evil.example/',
    '/\t/evil.example/',
    '/\n/evil.example/',
    'https://evil.example/',
    'http:evil.example',
    'javascript:alert(1)',
    'evil.example',
    '',
    '/login',
    `/${'a'.repeat(5000)}`,
  ]) {
    it(`never leads off this server's paths: next=${JSON.stringify(next.slice(0, 30))} goes to /`, async () => {
      const res = await postLogin({ token: TOKEN, next })
      expect(res.status).toBe(303)
      expect(res.headers.location).toBe('/')
    })
  }

  it.skipIf(NO_BROWSER)('in Chromium: a typed login lands back on the address with its filters', async () => {
    let browser: Browser | null = null
    try {
      browser = await launchChromium()
      const page = await browser.newPage()
      await page.goto(`${s.url}/?range=7d&tenant=acme`)
      await page.fill('#token', TOKEN)
      // The request the login's redirect leads to.
      const [landed] = await Promise.all([page.waitForRequest((r) => r.redirectedFrom()?.method() === 'POST', { timeout: 30_000 }), page.click('button[type=submit]')])
      const u = new URL(landed.url())
      expect(u.pathname + u.search).toBe('/?range=7d&tenant=acme')
      await landed.response()
      await page.waitForLoadState('load')
      expect(await page.evaluate(async () => (await fetch('/api/dashboard/summary')).status)).toBe(200)
    } finally {
      await browser?.close()
    }
  }, 60_000)
})
