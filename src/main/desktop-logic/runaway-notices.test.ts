import { describe, expect, it } from 'vitest'
import type { RunawayEvent } from '../budgets/runaway'
import { RunawayNoticeLog, runawayNotice } from './runaway-notices'

const event = (over: Partial<RunawayEvent> = {}): RunawayEvent => ({
  kind: 'loop',
  action: 'warn',
  session: '44444444-1c4f-4a8e-b6d5-3f2e1a0c9b8d',
  agent: 'claude-code',
  model: 'claude-sonnet-4-5',
  api_key_hash: 'h1',
  key_hint: 'sk-…0001',
  count: 5,
  usd_last_minute: 0,
  at: 0,
  ...over,
})
const settings = { windowMinutes: 10, usdPerMinute: 0.5 }

describe('runawayNotice', () => {
  it('a loop warning names the agent, the session, the count and window, and says what to do', () => {
    expect(runawayNotice(event(), settings)).toEqual({
      level: 'warning',
      title: 'Agent stuck in a loop: claude-code',
      body: 'claude-code (session 44444444…) sent the same claude-sonnet-4-5 conversation tail 5 times in 10 minutes. Its calls still go through: stop the agent, or give it a new instruction.',
    })
  })

  it('a blocked loop is blocking and says the repeats are refused', () => {
    const n = runawayNotice(event({ action: 'block', session: 'short' }), settings)
    expect(n.level).toBe('blocking')
    expect(n.body).toBe(
      'claude-code (session short) sent the same claude-sonnet-4-5 conversation tail 5 times in 10 minutes. Burnrate refuses these repeats. Stop the agent, or change its task or start a new session.',
    )
  })

  it('a spend-rate alarm names the spend of the last minute and the limit', () => {
    const warn = runawayNotice(event({ kind: 'spend_rate', usd_last_minute: 0.62, count: 0 }), settings)
    expect(warn).toEqual({
      level: 'warning',
      title: 'Agent spending fast: claude-code',
      body: 'claude-code (session 44444444…) spent $0.62 in the last minute (alarm above $0.50/minute). Its calls still go through: check what it is doing, and stop it if it is stuck.',
    })
    const block = runawayNotice(event({ kind: 'spend_rate', action: 'block', usd_last_minute: 0.62 }), settings)
    expect(block.level).toBe('blocking')
    expect(block.body).toMatch(/Burnrate refuses its calls until its spend rate falls\./)
  })

  it('an unknown agent and control characters in the session are said safely', () => {
    const n = runawayNotice(event({ agent: '', model: '', session: 'a\nb' }), settings)
    expect(n.title).toBe('Agent stuck in a loop: An agent')
    expect(n.body).toMatch(/^An agent \(session a\?b\) sent the same request conversation tail/)
  })
})

describe('RunawayNoticeLog', () => {
  it('claims once per key, session and kind', () => {
    const log = new RunawayNoticeLog()
    expect(log.claim(event())).toBe(true)
    expect(log.claim(event({ count: 9, at: 700_000 }))).toBe(false)
    expect(log.claim(event({ kind: 'spend_rate' }))).toBe(true)
    expect(log.claim(event({ session: 'other' }))).toBe(true)
    expect(log.claim(event({ api_key_hash: 'h2' }))).toBe(true)
    expect(log.claim(event({ kind: 'spend_rate' }))).toBe(false)
  })

  it('forgets the oldest sessions beyond its bound, so memory stays flat', () => {
    const log = new RunawayNoticeLog()
    for (let i = 0; i < 1001; i++) expect(log.claim(event({ session: `s${i}` }))).toBe(true)
    expect(log.claim(event({ session: 's1000' }))).toBe(false)
    expect(log.claim(event({ session: 's0' }))).toBe(true)
  })
})
