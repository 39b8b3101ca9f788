import type { Browser, BrowserContext } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NO_BROWSER, launchChromium, serveBuiltRenderer } from '../e2e/browser'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'

// "Spend today" and "this month" begin at midnight and on the 1st in the server's `timezone`. A
// browser in another zone (a team server in UTC, read from New York) must be told which midnight,
// or a day's spend since 19:00 local reads as the whole local day's.

let t: TestServer
let browser: Browser
let unserve: (() => void) | undefined
const contexts: BrowserContext[] = []

async function cards(timezoneId: string): Promise<{ today: string; month: string }> {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId })
  contexts.push(ctx)
  const page = await ctx.newPage()
  await page.goto(`${t.url}/`)
  const hint = (card: string) => page.getByTestId(card).locator('.hint').first()
  await expect.poll(() => page.getByTestId('card-today').locator('.money').count()).toBe(1)
  return { today: (await hint('card-today').textContent())!.trim(), month: (await hint('card-month').textContent())!.trim() }
}

beforeAll(async () => {
  if (NO_BROWSER) return
  unserve = serveBuiltRenderer()
  t = await startTestServer({ timezone: 'Asia/Tokyo' })
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  for (const c of contexts) await c.close()
  await browser?.close()
  await t?.cleanup()
  unserve?.()
})

describe.skipIf(NO_BROWSER !== null)("the summary cards' periods", { timeout: 120_000 }, () => {
  it("name the server's zone to a browser in another zone, and not to one in the same", async () => {
    expect((await request(`${t.url}/api/dashboard/summary`)).json().timezone).toBe('Asia/Tokyo')
    expect(await cards('America/New_York')).toEqual({ today: 'since midnight, Asia/Tokyo time', month: 'since the 1st, Asia/Tokyo time' })
    expect(await cards('Asia/Tokyo')).toEqual({ today: 'since midnight', month: 'since the 1st' })
  })
})
