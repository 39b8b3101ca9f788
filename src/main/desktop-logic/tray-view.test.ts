import { describe, expect, it } from 'vitest'
import { budgetAlert as alert } from './test-helpers'
import { budgetLevel, trayView } from './tray-view'


describe('budgetLevel', () => {
  it('is ok without alerts, and the worst level otherwise', () => {
    expect(budgetLevel([])).toBe('ok')
    expect(budgetLevel([alert()])).toBe('warning')
    expect(budgetLevel([alert(), alert({ level: 'blocking' }), alert()])).toBe('blocking')
  })
})

describe('trayView', () => {
  it("marks today's amount when some of its calls have no known price, and says how many in a line of its own", () => {
    const mac = trayView({ todayUsd: 1.2, unpricedToday: 3, alerts: [], platform: 'darwin', projectedUsd: 4 })
    expect(mac.title).toBe('$1.20+')
    expect(mac.headline).toBe('Today: $1.20+')
    expect(mac.unpricedLine).toBe("3 calls today have no price: see the dashboard's Unpriced models")
    expect(mac.tooltip).toBe("Burnrate: $1.20+ today\n3 calls today have no price: see the dashboard's Unpriced models\nOn pace for $4.00+ by midnight")
    // Nothing priced at all: never a plain "$0.00", which reads as nothing spent.
    const none = trayView({ todayUsd: 0, unpricedToday: 1, alerts: [], platform: 'darwin' })
    expect(none.title).toBe('$0.00+')
    expect(none.unpricedLine).toBe("1 call today has no price: see the dashboard's Unpriced models")
    // Every call priced: as before.
    expect(trayView({ todayUsd: 1.2, unpricedToday: 0, alerts: [], platform: 'darwin' })).toMatchObject({ title: '$1.20', headline: 'Today: $1.20', unpricedLine: null, tooltip: 'Burnrate: $1.20 today' })
  })

  it("marks a budget line's spend when its window holds calls of no known price", () => {
    const one = trayView({ todayUsd: 4.12, alerts: [alert({ unpriced_requests: 2 })], platform: 'linux' })
    expect(one.budgetLine).toBe('Warning: sk-dev-* daily $4.12 + 2 unpriced of $5.00')
    expect(one.tooltip).toContain('Warning: sk-dev-* daily $4.12 + 2 unpriced of $5.00')
    expect(trayView({ todayUsd: 0, alerts: [alert({ spent_usd: 0, level: 'blocking', limit_usd: 0, unpriced_requests: 1 })], platform: 'linux' }).budgetLine).toBe('Blocking: sk-dev-* daily $0.00 1 unpriced of $0.00')
    // None (or an older server's answer without the count): as before.
    expect(trayView({ todayUsd: 4.12, alerts: [alert({ unpriced_requests: 0 })], platform: 'linux' }).budgetLine).toBe('Warning: sk-dev-* daily $4.12 of $5.00')
  })

  it('says when a budget line it could not renew was read (the server erred or went quiet since), in the zone shown', () => {
    const now = Date.parse('2026-12-07T15:00:00Z')
    const stale = trayView({ todayUsd: null, errorStatus: 500, alerts: [alert({ level: 'blocking', spent_usd: 5.5 })], budgetsReadAt: Date.parse('2026-12-07T14:20:00Z'), now, timeZone: 'UTC', platform: 'linux' })
    expect(stale.budgetLine).toBe('Blocking: sk-dev-* daily $5.50 of $5.00 (last read 14:20)')
    expect(stale.tooltip.split('\n')).toEqual(['Burnrate: server error (HTTP 500) reading today’s spend', 'Blocking: sk-dev-* daily $5.50 of $5.00 (last read 14:20)'])
    expect(stale.icon).toBe('blocking')
    // Read the day before: the day is named.
    expect(trayView({ todayUsd: null, alerts: [alert()], budgetsReadAt: Date.parse('2026-12-06T23:50:00Z'), now, timeZone: 'UTC', platform: 'linux' }).budgetLine).toBe('Warning: sk-dev-* daily $4.12 of $5.00 (last read Sun 23:50)')
    // Current: as before.
    expect(trayView({ todayUsd: 1, alerts: [alert()], budgetsReadAt: null, now, platform: 'linux' }).budgetLine).toBe('Warning: sk-dev-* daily $4.12 of $5.00')
  })

  it('adds the pace to the tooltip when today has spend and the projection is higher', () => {
    expect(trayView({ todayUsd: 2, alerts: [], platform: 'linux', projectedUsd: 7.5 }).tooltip).toBe('Burnrate: $2.00 today\nOn pace for $7.50 by midnight')
    expect(trayView({ todayUsd: 0, alerts: [], platform: 'linux', projectedUsd: 0 }).tooltip).toBe('Burnrate: $0.00 today')
    expect(trayView({ todayUsd: 2, alerts: [], platform: 'linux' }).tooltip).toBe('Burnrate: $2.00 today')
  })

  it('puts the spend in the macOS title and nowhere else in the title', () => {
    const mac = trayView({ todayUsd: 12.3456, alerts: [], platform: 'darwin' })
    expect(mac.title).toBe('$12.35')
    expect(mac.headline).toBe('Today: $12.35')
    expect(mac.tooltip).toBe('Burnrate: $12.35 today')
    const linux = trayView({ todayUsd: 12.3456, alerts: [], platform: 'linux' })
    expect(linux.title).toBe('')
    expect(linux.tooltip).toBe('Burnrate: $12.35 today')
    expect(linux.headline).toBe('Today: $12.35')
    expect(linux.budgetLine).toBeNull()
    expect(linux.icon).toBe('ok')
  })

  it('names a single rule at its warning level', () => {
    const v = trayView({ todayUsd: 4.12, alerts: [alert()], platform: 'win32' })
    expect(v.icon).toBe('warning')
    expect(v.budgetLine).toBe('Warning: sk-dev-* daily $4.12 of $5.00')
    expect(v.tooltip).toBe('Burnrate: $4.12 today\nWarning: sk-dev-* daily $4.12 of $5.00')
  })

  it('counts one rule once even when several keys hit it, at its worst level', () => {
    const v = trayView({
      todayUsd: 9,
      alerts: [alert({ api_key_hash: 'b'.repeat(64) }), alert({ level: 'blocking', spent_usd: 5 })],
      platform: 'linux',
    })
    expect(v.icon).toBe('blocking')
    expect(v.budgetLine).toBe('Blocking: sk-dev-* daily $5.00 of $5.00')
  })

  it('summarises several rules', () => {
    const v = trayView({
      todayUsd: 9,
      alerts: [alert({ level: 'blocking' }), alert({ api_key_pattern: '*', period: 'monthly' }), alert({ api_key_pattern: 'sk-ci-*' })],
      platform: 'linux',
    })
    expect(v.budgetLine).toBe('1 budget blocking, 2 at warning level')
  })

  it('says when the spend cannot be read', () => {
    const v = trayView({ todayUsd: null, alerts: [], platform: 'darwin' })
    expect(v.title).toBe('—')
    expect(v.headline).toBe('Today: —')
    expect(v.tooltip).toBe('Burnrate: server not answering')
  })

  it('tells a server that answers with an error from one that does not answer', () => {
    const v = trayView({ todayUsd: null, alerts: [], platform: 'linux', errorStatus: 500 })
    expect(v.headline).toBe('Today: — (server error)')
    expect(v.tooltip).toBe('Burnrate: server error (HTTP 500) reading today’s spend')
    const gone = trayView({ todayUsd: null, alerts: [], platform: 'linux', errorStatus: 404 })
    expect(gone.headline).toBe('Today: — (HTTP 404)')
    expect(gone.tooltip).toBe('Burnrate: the server answered HTTP 404 to the request for today’s spend')
  })

  it('tells a server that refuses the dashboard token from one that does not answer', () => {
    const v = trayView({ todayUsd: null, alerts: [], platform: 'linux', refused: true })
    expect(v.headline).toBe('Today: — (dashboard token refused)')
    expect(v.tooltip).toBe('Burnrate: the server answers but refuses the dashboard token (dashboard.token in config.yaml)')
  })

  it('keeps the tooltip within what Windows shows', () => {
    const v = trayView({ todayUsd: 1, alerts: [alert({ api_key_pattern: 'x'.repeat(200) })], platform: 'win32' })
    expect(v.tooltip.length).toBeLessThanOrEqual(127)
    expect(v.tooltip.endsWith('…')).toBe(true)
  })
})
