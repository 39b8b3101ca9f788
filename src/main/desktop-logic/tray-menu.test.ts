import { describe, expect, it } from 'vitest'
import { trayMenu } from './tray-menu'
import { trayView } from './tray-view'
import { budgetAlert } from './test-helpers'

describe('trayMenu', () => {
  it('starts with today and lists every action', () => {
    const items = trayMenu({ view: trayView({ todayUsd: 3.2, alerts: [], platform: 'linux' }), startAtLogin: true, attachedTo: null })
    expect(items[0]).toEqual({ type: 'label', label: 'Today: $3.20' })
    expect(items.filter((i) => i.type === 'action' || i.type === 'checkbox').map((i) => ('label' in i ? i.label : ''))).toEqual([
      'Open dashboard',
      'Open in browser',
      'Copy agent setup',
      'Start at login',
      'Quit Burnrate',
    ])
    expect(items.find((i) => i.type === 'checkbox')).toMatchObject({ checked: true })
  })

  it('adds the budget state and the attached server under the spend', () => {
    const view = trayView({ todayUsd: 5, alerts: [budgetAlert({ level: 'blocking', spent_usd: 5 })], platform: 'linux' })
    const items = trayMenu({ view, startAtLogin: false, attachedTo: 'http://127.0.0.1:8787' })
    expect(items.slice(0, 3)).toEqual([
      { type: 'label', label: 'Today: $5.00' },
      { type: 'label', label: 'Blocking: sk-dev-* daily $5.00 of $5.00' },
      { type: 'label', label: 'Attached to the Burnrate at http://127.0.0.1:8787' },
    ])
  })
})
