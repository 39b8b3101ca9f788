import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsOf, sendTestAlert } from '../../src/main/alerts'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from '../budgets/support'
import { eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'
import { receiver } from './support'

/**
 * An alert a shutdown left undelivered is kept in the file (`alert_outbox`, its body with the
 * key's hint, rule and spend) for the next start. A start with no webhook configured (they were
 * all removed) never read the outbox, so the row stayed on disk for good. It is cleared then, and
 * a webhook configured again later does not get the old alert.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

const KEY = 'sk-gone-aaaaaaaaaaaa-0001'
const rows = (file: string) => {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM alert_outbox').get() as { n: number }).n
  } finally {
    db.close()
  }
}

describe('alerts kept for the next start, when the next start has no webhook (SQLite)', () => {
  it('are cleared from the file, not kept for good', async () => {
    const hook = await receiver(1)
    const budgets = { rules: [{ api_key_pattern: 'sk-gone-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
    const withHook = { timezone: 'UTC', budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 } }
    let t = await startTestServer(withHook, upstream.url)
    const dir = t.dir
    try {
      for (let i = 0; i < 2; i++) {
        expect((await chat(t, KEY)).status).toBe(200)
        await eventually(() => callsOf(t, KEY).length === i + 1)
      }
      await eventually(() => alertsOf(t.server.context).webhooks.deliveries()[0]?.last_status === 500)
      await t.stop()
      expect(rows(t.dbFile)).toBe(1)
      // Started with no webhook: the kept alert goes nowhere, and is not kept either.
      t = await startTestServer({ timezone: 'UTC', budgets }, upstream.url, dir)
      await t.stop()
      expect(rows(t.dbFile)).toBe(0)
      // The webhook configured again: the old alert is not sent. What the outbox kept is sent as
      // the server starts, and a webhook's alerts go in turn: a test alert sent now reaches it
      // after any such one, and is the only alert made or received.
      t = await startTestServer(withHook, upstream.url, dir)
      const a = alertsOf(t.server.context)
      const [test] = await sendTestAlert(a)
      expect(test.status).toBe('delivered')
      expect(a.webhooks.deliveries().map((d) => d.type)).toEqual(['test'])
      expect(hook.got.map((g) => g.body.type)).toEqual(['test'])
    } finally {
      await t.cleanup()
      await hook.close()
    }
  })
})
