import { NANO_COST } from '../budgets/support'
import { startBuiltServer } from '../load/harness'
import { downOnceReceiver } from '../support/down-once-receiver'
import { postJson } from '../support/http'
import type { PgHarness } from '../support/pg-harness'

/** The SIGKILL tests' rule: `sk-kill-*` warned at 50% of two calls' cost. */
export const killBudgets = { rules: [{ api_key_pattern: 'sk-kill-*', daily_limit_usd: NANO_COST * 2, action: 'warn', alert_at_pct: [0.5] }] }

const CALL = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100 }

/** A call of `key` to the built instance at `base`. */
export const killCall = (base: string, key: string) => postJson(`${base}/v1/chat/completions`, CALL, { authorization: `Bearer ${key}` })

/**
 * A built instance (out/main/cli.js) on a new database with the `sk-kill-*` rule and a JSON
 * webhook down for its first POST (a retry after a minute, three of them): the set-up of the
 * tests that kill it while that retry waits. `config` starts it again on `first.dataDir`.
 */
export async function killedRetrySetup(h: PgHarness) {
  const hook = await downOnceReceiver()
  h.onTeardown(() => hook.close())
  const url = h.database()
  const store = h.store(url)
  const config = {
    timezone: 'UTC',
    pricing: { auto_update: false },
    storage: { url },
    alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 },
    budgets: killBudgets,
  }
  const first = await startBuiltServer(config, h.upstream.url)
  return { hook, url, store, config, first }
}
