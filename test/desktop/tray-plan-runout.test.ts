import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { planTray } from './plan-tray'

/**
 * The tray's pace, "out at 13:05", went on reading so after 13:05 until its next refresh (30 s, or
 * the minute set here) when no answer came meanwhile: the tracker draws a later run-out time (or
 * none) only when asked again, and the presenter asked again at a reset but not at a run-out time.
 * It now redraws at the earliest run-out time too. Real server on SQLite, a mock Anthropic whose
 * 5-hour window rose from 90% to 91% in a second: out in about nine seconds at that pace; asked
 * again then, the pace of 1% in ten seconds no longer runs it out before its reset.
 */

const tray = planTray()
const view = tray.view
tray.state.utilization = '0.90'
const call = () => tray.call('sk-ant-oat01-tray-plan-runout-aaaa')

describe("the tray and a plan window's run-out time", () => {
  it('draws the pace again at the run-out time, without waiting for the refresh', async () => {
    // Half a minute ahead: the first run-out (about 9 s after the second reading) comes before it,
    // the next (about 90 s after) does not.
    const reset = (tray.state.reset = Math.ceil((Date.now() + 30_000) / 1000) * 1000)
    expect((await call()).status).toBe(200)
    const first = Date.now()
    await eventually(() => view()?.planLine?.startsWith('5h 90%') === true, 10_000)
    await eventually(() => Date.now() >= first + 1000, 5_000)
    tray.state.utilization = '0.91'
    expect((await call()).status).toBe(200)
    await eventually(() => view()?.planLine?.startsWith('5h 91%') === true && view()!.planLine!.includes(' · out at '), 10_000)
    await eventually(() => view()?.planLine?.startsWith('5h 91%') === true && view()!.planLine!.includes(' · on pace for '), reset - Date.now() + 5_000)
  }, 60_000)
})
