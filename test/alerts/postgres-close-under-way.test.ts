import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'

/**
 * On PostgreSQL an alert is claimed before it is sent, and the claims of alerts not sent by
 * shutdown are let go then (./postgres-retry-after.test.ts). An attempt under way at shutdown
 * that the webhook then refuses (a 503) is not sent either, and no retry follows: its claim must
 * be let go too, or the next start reads the crossing back as sent and the alert is lost. (One
 * cut unanswered keeps its claim: the webhook may have taken it.)
 */

const h = usePostgres()
const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }
const budgets = { rules: [{ api_key_pattern: 'sk-slow-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }

/** Holds the first POST until `refuse()` answers it 503; takes the later ones. */
async function firstRefusedLate() {
  const got: any[] = []
  let posts = 0
  let held: http.ServerResponse | null = null
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    if (++posts === 1) {
      held = res
      return
    }
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(200).end('ok')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    got,
    posts: () => posts,
    refuse: () => held?.writeHead(503).end('unavailable'),
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    }),
  }
}

describe('an alert whose attempt is under way at shutdown (PostgreSQL)', () => {
  it('is sent by the instance started again', async () => {
    const hook = await firstRefusedLate()
    h.onTeardown(() => hook.close())
    const withHook = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 20, timeout_ms: 60_000 } }
    const url = h.database()
    const b = await pgBudgetServer(h, url, withHook)
    replayJson(h.upstream, NANO_FIXTURE)
    const key = 'sk-slow-dddddddd-0004'
    const sent = () => hook.got.filter((g) => g.api_key_hash === hashKey(key)).map((g) => g.threshold_pct)
    for (let i = 0; i < 2; i++) expect((await postJson(`${b.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })).status).toBe(200)
    // Claimed, and its first attempt reached the webhook, which has not answered.
    await eventually(() => hook.posts() === 1, 20_000)
    expect(await b.store.all('SELECT id FROM alert_claims')).toHaveLength(1)
    // Shut down: once the sender is closed, the webhook refuses the attempt; nothing retries it.
    // The refusal is sent the moment close() begins (not when a poll sees it), so the answer
    // arrives well within the CLOSE_WAIT_MS close() waits, however busy the machine.
    const sender = alertsOf(b.server.context).webhooks
    const close = sender.close.bind(sender)
    sender.close = () => {
      const closing = close()
      hook.refuse()
      return closing
    }
    await b.stop()
    expect(hook.got).toEqual([])
    const b2 = await pgBudgetServer(h, url, withHook, b.dir)
    await eventually(() => (budgetsOf(b2.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
    await eventually(() => expect(sent()).toEqual([0.5]), 20_000)
  }, 90_000)
})
