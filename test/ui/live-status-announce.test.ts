import type { Route } from 'playwright'
import { describe, expect, it } from 'vitest'
import { NO_BROWSER } from '../e2e/browser'
import { useDashboard } from '../support/dashboard-page'

// The top bar's status ("Live · updated 12s ago") is a live region (role="status"): a screen
// reader reads out every change of its text. Its age counted up every second inside it, so the
// reader announced "Live · updated 5s ago", "… 6s ago", "… 7s ago" once a second, for as long as
// the page was open, drowning every other announcement. Only a change of state (Live, Offline,
// token needed) is to be announced; the age is shown beside it.

const held: Route[] = []

const dash = useDashboard({
  clock: true,
  after: async () => {
    for (const r of held) await r.abort().catch(() => {})
  },
})

describe.skipIf(NO_BROWSER !== null)("the top bar's live status", { timeout: 120_000 }, () => {
  it('announces a change of state, not every second of the age beside it', async () => {
    const { page } = dash
    const status = page.getByTestId('live-status')
    await expect.poll(() => status.textContent()).toMatch(/^Live · updated just now$/)
    // Every text the live region takes from here on, as a screen reader is told of it.
    await page.evaluate(() => {
      const w = window as unknown as { announced: string[] }
      w.announced = []
      const regions = () => [...document.querySelectorAll('header [role="status"], header [aria-live]')]
      const seen = () => regions().map((r) => r.textContent?.trim() ?? '').join(' | ')
      new MutationObserver(() => {
        const s = seen()
        if (w.announced.at(-1) !== s) w.announced.push(s)
      }).observe(document.querySelector('header')!, { subtree: true, childList: true, characterData: true })
      w.announced.push(seen())
    })
    // The server gets slow (no refresh ends) and 20 seconds go by: the state stays Live all along.
    await page.route('**/api/**', (r) => void held.push(r))
    await page.clock.pauseAt(Date.now() + 500)
    await page.clock.runFor(20_000)
    await expect.poll(() => status.textContent()).toMatch(/^Live · updated 2\ds ago$/)
    const announced = await page.evaluate(() => (window as unknown as { announced: string[] }).announced)
    expect(announced).toEqual(['Live'])
  })
})
