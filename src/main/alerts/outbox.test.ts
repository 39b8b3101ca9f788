import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../ledger/db'
import { AlertOutbox } from './outbox'
import { testPayload } from './payload'
import type { WebhookTarget } from './webhooks'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function outbox(): AlertOutbox {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-outbox-'))
  dirs.push(dir)
  return new AlertOutbox(openDatabase(join(dir, 'burnrate.db')))
}

const HOOK: WebhookTarget = { url: 'http://127.0.0.1:9/hook', format: 'json' }
const T = Date.UTC(2026, 2, 10, 12)

/** A 50% threshold of a 5-hour window whose oldest minute leaves it a minute from now (its `resets_at`). */
const windowAlert = () => {
  const p = testPayload('alert_window', T)
  return { ...p, type: 'budget.threshold' as const, window: { period: 'window', window_hours: 5, resets_at: new Date(T + 60_000).toISOString() } }
}

describe('alerts kept for the next start', () => {
  it("a rolling window's threshold is still sent by a start ten minutes later (its resets_at, a minute away, is not when it goes stale)", () => {
    const o = outbox()
    o.keep([{ id: 'd1', target: HOOK, payload: windowAlert() }], T)
    expect(o.take([HOOK], T + 10 * 60_000).map((u) => u.payload.id)).toEqual(['alert_window'])
  })

  it("a calendar period's is not sent once its period has reset, nor to a webhook no longer configured, and each is taken once", () => {
    const o = outbox()
    const daily = testPayload('alert_daily', T)
    o.keep([{ id: 'd1', target: HOOK, payload: daily }, { id: 'd2', target: { ...HOOK, url: 'http://127.0.0.1:9/other' }, payload: daily }], T)
    expect(o.take([HOOK], T + 86_400_000 + 1)).toEqual([])
    o.keep([{ id: 'd3', target: HOOK, payload: daily }], T)
    expect(o.take([HOOK], T + 1).map((u) => u.payload.id)).toEqual(['alert_daily'])
    expect(o.take([HOOK], T + 2)).toEqual([])
  })

  it('an alert kept again by each start that could not deliver it (the webhook down across restarts) goes stale as it would have once: from when it was made, not from each save', () => {
    const o = outbox()
    const runaway = { type: 'runaway.loop' as const, id: 'alert_runaway', created_at: new Date(T).toISOString(), action: 'warn' as const, session: 's1', agent: 'a', model: 'm', api_key_hash: '0'.repeat(64), key_hint: 'sk-…0001', repeats: 5, usd_last_minute: 0 }
    const window = windowAlert()
    o.keep([{ id: 'd1', target: HOOK, payload: runaway }, { id: 'd2', target: HOOK, payload: window }], T)
    // Each start, 50 minutes after the last, takes them, fails to send them and keeps them again.
    let at = T
    for (let i = 0; i < 5; i++) {
      at += 50 * 60_000
      const taken = o.take([HOOK], at)
      o.keep(taken.map((u, i) => ({ id: `again${at}-${i}`, target: u.target, payload: u.payload })), at)
    }
    // Made 4 hours 10 minutes ago: the runaway alert (an hour) is stale; the 5-hour window's is not yet.
    expect(o.take([HOOK], at).map((u) => u.payload.id)).toEqual(['alert_window'])
    o.keep([{ id: 'd3', target: HOOK, payload: window }], at)
    // Made 6 hours ago: stale too.
    expect(o.take([HOOK], T + 6 * 3600_000)).toEqual([])
  })
})

describe('the webhook an alert is kept for', () => {
  it('is the one a start configures with another fragment (never sent, and alert claims leave it out), and a row kept by the last build still matches', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-outbox-'))
    dirs.push(dir)
    const db = openDatabase(join(dir, 'burnrate.db'))
    const o = new AlertOutbox(db)
    const daily = testPayload('alert_daily', T)
    o.keep([{ id: 'd1', target: { ...HOOK, url: `${HOOK.url}#team-a` }, payload: daily }], T)
    expect(o.take([{ ...HOOK, url: `${HOOK.url}#team-b` }], T + 1).map((u) => u.payload.id)).toEqual(['alert_daily'])
    // As the last build kept it: the address with its fragment, hashed.
    const lastBuilds = createHash('sha256').update(`json ${HOOK.url}#team-a`).digest('hex')
    db.prepare('INSERT INTO alert_outbox (id, target, body, until) VALUES (?, ?, ?, ?)').run('d2', lastBuilds, JSON.stringify(daily), T + 86_400_000)
    expect(o.take([{ ...HOOK, url: `${HOOK.url}#team-a` }], T + 1).map((u) => u.payload.id)).toEqual(['alert_daily'])
  })
})
