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

describe('trayMenu: agents', () => {
  it('lists installed and connected agents as checkboxes, with disconnect-all once one is connected', () => {
    const view = trayView({ todayUsd: 0, alerts: [], platform: 'linux' })
    const agents = [
      { agent: 'claude-code', name: 'Claude Code', installed: true, connected: true },
      { agent: 'codex', name: 'Codex CLI', installed: true, connected: false },
      { agent: 'gemini-cli', name: 'Gemini CLI', installed: false, connected: false },
    ]
    const items = trayMenu({ view, startAtLogin: true, attachedTo: null, agents })
    expect(items.filter((i) => i.type === 'checkbox' && i.action.startsWith('toggle-agent:'))).toEqual([
      { type: 'checkbox', label: 'Claude Code', action: 'toggle-agent:claude-code', checked: true },
      { type: 'checkbox', label: 'Codex CLI', action: 'toggle-agent:codex', checked: false },
    ])
    expect(items).toContainEqual({ type: 'action', label: 'Disconnect all agents', action: 'disconnect-all' })
    const seen = trayMenu({ view, startAtLogin: true, attachedTo: null, now: 1_000_000, agents: [{ ...agents[0], lastCallAt: 1_000_000 - 125_000 }, { ...agents[1], connected: true, lastCallAt: null }] })
    expect(seen.filter((i) => i.type === 'label' && i.label.includes('last call')).map((i) => (i as { label: string }).label.trim())).toEqual([
      'last call: 2 min ago',
      'last call: none yet',
    ])
    const none = trayMenu({ view, startAtLogin: true, attachedTo: null, agents: agents.map((a) => ({ ...a, connected: false })) })
    expect(none.some((i) => i.type === 'action' && i.action === 'disconnect-all')).toBe(false)
  })

  it("says under today's spend how many of today's calls have no price", () => {
    const view = trayView({ todayUsd: 1.2, unpricedToday: 3, alerts: [budgetAlert()], platform: 'linux' })
    expect(trayMenu({ view, startAtLogin: false, attachedTo: null }).slice(0, 3)).toEqual([
      { type: 'label', label: 'Today: $1.20+' },
      { type: 'label', label: "3 calls today have no price: see the dashboard's Unpriced models" },
      { type: 'label', label: 'Warning: sk-dev-* daily $4.12 of $5.00' },
    ])
  })
})
