import { describe, expect, it } from 'vitest'
import { alertsOf } from '../../src/main/alerts'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer } from '../budgets/support'
import { type BuiltServer, startBuiltServer } from '../load/harness'
import { fixture } from '../support/fixtures'
import { downOnceReceiver } from '../support/down-once-receiver'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * On PostgreSQL the claim of an instance killed outright (a crash, SIGKILL, the machine lost) with
 * its alert's retry waiting stood: the instance that had lost the claim stood by for it until it
 * aged out (about 27 minutes with the defaults, a query every 2 s), then took it as sent, and unless
 * the killed one started again no instance sent the alert. An instance holding claims says so in
 * them every few seconds; one standing by takes over the claim of a holder silent for 30 s and
 * sends it, and the killed one started later does not send it again. Against the built server
 * (out/main/cli.js) for the instance killed.
 */

const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture(NANO_FIXTURE) }) })

const CALL = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100 }
const budgets = { rules: [{ api_key_pattern: 'sk-kill-*', daily_limit_usd: NANO_COST * 2, action: 'warn', alert_at_pct: [0.5] }] }

describe('a claim whose holder was killed outright (PostgreSQL)', () => {
  it('is taken over by the instance standing by, which sends the alert, once', async () => {
    const hook = await downOnceReceiver()
    h.onTeardown(() => hook.close())
    const url = h.database()
    const key = 'sk-kill-aaaaaaaaaaaa-0006'
    const alerts = { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 }
    const config = { timezone: 'UTC', pricing: { auto_update: false }, storage: { url }, alerts, budgets }
    const b = await pgBudgetServer(h, url, { timezone: 'UTC', budgets, alerts })
    const first = await startBuiltServer(config, h.upstream.url)
    let again: BuiltServer | null = null
    try {
      // A claims the crossing and is refused (its retry waits a minute); B, which lost the claim, stands by.
      expect((await postJson(`${first.url}/v1/chat/completions`, CALL, { authorization: `Bearer ${key}` })).status).toBe(200)
      await eventually(() => hook.posts() === 1, 20_000)
      await eventually(() => alertsOf(b.server.context).standingBy() === 1, 20_000)
      await first.kill('SIGKILL')
      // B takes the claim over once A has been silent for 30 s, and sends it.
      await eventually(() => hook.got.length === 1, 90_000)
      expect(hook.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(key) })
      // A started again finds its claim another's: it does not send the alert from its file.
      again = await startBuiltServer(config, h.upstream.url, first.dataDir)
      expect((await postJson(`${again.url}/v1/chat/completions`, CALL, { authorization: 'Bearer sk-kill-aaaaaaaaaaaa-0007' })).status).toBe(200)
      await eventually(() => hook.got.some((g) => g.api_key_hash === hashKey('sk-kill-aaaaaaaaaaaa-0007')), 20_000)
      expect(hook.got.filter((g) => g.api_key_hash === hashKey(key))).toHaveLength(1)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 180_000)
})
