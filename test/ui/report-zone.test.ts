import type { Browser, BrowserContext, Page } from 'playwright'
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

async function openIn(timezoneId: string): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId })
  contexts.push(ctx)
  const page = await ctx.newPage()
  await page.goto(`${t.url}/`)
  await expect.poll(() => page.getByTestId('card-today').locator('.money').count()).toBe(1)
  return page
}

async function cards(timezoneId: string): Promise<{ today: string; month: string }> {
  const page = await openIn(timezoneId)
  const hint = (card: string) => page.getByTestId(card).locator('.hint').first()
  return { today: (await hint('card-today').textContent())!.trim(), month: (await hint('card-month').textContent())!.trim() }
}

/** The other figures counted from the server's midnight: the other cards' hints and the forecast's day and month. */
async function others(timezoneId: string): Promise<string[]> {
  const page = await openIn(timezoneId)
  const hint = async (card: string) => (await page.getByTestId(card).locator('.hint').first().textContent())!.trim()
  const overall = page.getByTestId('overall-forecast').locator('> span')
  await expect.poll(() => overall.count()).toBe(2)
  const periods = (await overall.allTextContents()).map((x) => x.replace(/\s+/g, ' ').trim().split(':')[0])
  return [await hint('card-requests'), await hint('card-avg'), await hint('card-errors'), ...periods]
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

  it("name it on the other figures of the server's day and month too", async () => {
    expect(await others('America/New_York')).toEqual([
      'calls recorded since midnight, Asia/Tokyo time',
      '0 billed calls today, Asia/Tokyo time',
      'failed calls today, Asia/Tokyo time',
      'Today, Asia/Tokyo time',
      'This month, Asia/Tokyo time',
    ])
    expect(await others('Asia/Tokyo')).toEqual(['calls recorded', '0 billed calls today', 'failed calls today', 'Today', 'This month'])
  })
})
