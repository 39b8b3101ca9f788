import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { planTray } from './plan-tray'

/**
 * The tray in the app's own process shows the fullest plan window until its reset, then the next
 * one (or none). Nothing told it of the reset: the tracker speaks only when an answer is read, so
 * a Claude 5-hour window at 97% went on reading "5h 97% · resets 14:20" (the menu-bar title
 * "5h 97%") past 14:20 until the next refresh, which here is a minute away, as it may be when set
 * so. The presenter now redraws at the earliest shown plan window's reset too. Real server on
 * SQLite, a mock Anthropic sending the unified headers of a window that resets in a few seconds.
 */

const tray = planTray()
const view = tray.view

describe('the tray and a plan window that resets', () => {
  it('drops the window at its reset and shows the next fullest, without waiting for the refresh', async () => {
    // A whole second (Anthropic sends epoch seconds), 3 to 4 seconds ahead.
    const reset = (tray.state.reset = Math.ceil((Date.now() + 3000) / 1000) * 1000)
    expect((await tray.call('sk-ant-oat01-tray-plan-reset-aaaa')).status).toBe(200)
    await eventually(() => view()?.planLine?.startsWith('5h 97%') === true, 10_000)
    expect(Date.now()).toBeLessThan(reset)
    expect(view()!.title).toContain('5h 97%')
    // After the reset, the 7-day window is the fullest the tray can speak of.
    await eventually(() => view()?.planLine?.startsWith('7d 40%') === true, reset - Date.now() + 5_000)
    expect(view()!.title).toContain('7d 40%')
  }, 30_000)
})
