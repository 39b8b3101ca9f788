import type { Browser, Page } from 'playwright'
import { afterAll, beforeAll } from 'vitest'
import { NO_BROWSER, launchChromium, serveBuiltRenderer } from '../e2e/browser'
import { type MockUpstream, type Responder, startMockUpstream } from './mock-upstream'
import { type TestServer, startTestServer } from './server'

// The set-up every dashboard test in Chromium repeats: the built renderer served, a mock upstream
// (when the test makes calls through the proxy), a test server with the test's config, whatever
// the test records before the page loads, then Chromium and one 1440×900 page on the dashboard;
// all closed again after. Nothing is started when NO_BROWSER (the tests skip then).

export interface DashboardOptions {
  /** The server's config (startTestServer's first argument), or a function making it once the
   *  upstream is up, which may start what the config names (a webhook receiver). */
  config?: Record<string, any> | (() => Record<string, any> | Promise<Record<string, any>>)
  /** Starts a mock upstream answering with this, and points the server at it. */
  responder?: Responder
  /** Runs once the server is up, before Chromium: record calls, post rules, wait for figures. */
  before?: (d: { t: TestServer; upstream: MockUpstream | undefined }) => unknown
  /** Put in the page's sessionStorage before it loads, as a user who unlocked the admin API. */
  adminToken?: string
  /** Installs the page's fake clock before it loads. */
  clock?: boolean
  /** Runs on the new page before it loads (routes). */
  beforeLoad?: (page: Page) => unknown
  /** The dashboard's address after the server's, e.g. '/?group=provider'. Default '/'. */
  path?: string
  /** Runs once the page has loaded. */
  loaded?: (page: Page) => unknown
  /** Runs first after the tests, before the browser and servers are closed. */
  after?: () => unknown
}

export interface Dashboard {
  readonly t: TestServer
  readonly upstream: MockUpstream
  readonly browser: Browser
  readonly page: Page
}

/** Registers beforeAll/afterAll for a dashboard page on a test server; returns what they made. */
export function useDashboard(opts: DashboardOptions = {}): Dashboard {
  let unserve: (() => void) | undefined
  let upstream: MockUpstream | undefined
  let t: TestServer | undefined
  let browser: Browser | undefined
  let page: Page | undefined

  beforeAll(async () => {
    if (NO_BROWSER) return
    unserve = serveBuiltRenderer()
    if (opts.responder) {
      upstream = await startMockUpstream()
      upstream.setResponder(opts.responder)
    }
    const config = typeof opts.config === 'function' ? await opts.config() : opts.config
    t = await startTestServer(config ?? { timezone: 'UTC' }, upstream?.url)
    await opts.before?.({ t, upstream })
    browser = await launchChromium()
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } })
    if (opts.adminToken !== undefined) await ctx.addInitScript((token) => sessionStorage.setItem('burnrate.adminToken', token), opts.adminToken)
    page = await ctx.newPage()
    await opts.beforeLoad?.(page)
    if (opts.clock) await page.clock.install()
    await page.goto(`${t.url}${opts.path ?? '/'}`)
    await opts.loaded?.(page)
  }, 120_000)

  afterAll(async () => {
    await opts.after?.()
    await browser?.close()
    await t?.cleanup()
    await upstream?.close()
    unserve?.()
  })

  const need = <T>(what: string, v: T | undefined): T => {
    if (v === undefined) throw new Error(`useDashboard: no ${what} (not started yet${what === 'upstream' ? ', or no responder given' : ''})`)
    return v
  }
  return {
    get t() { return need('test server', t) },
    get upstream() { return need('upstream', upstream) },
    get browser() { return need('browser', browser) },
    get page() { return need('page', page) },
  }
}
