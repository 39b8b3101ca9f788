import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { Pricer } from '../../src/main/pricing/price'
import { runCliCaptured } from '../support/cli'

/**
 * Codex 0.171 writes the stored ChatGPT login's account into `session_meta` (`account_scoped`,
 * `creator_user_id`, `creator_account_id`) whatever provider the session runs on: run with
 * `model_provider = "openrouter"` (its key from `env_key`), or a provider of the user's own on an
 * OpenAI API key (the Connect panel's `burnrate`), beside a ChatGPT login, the real Codex wrote
 * them too, and sent that provider its API key, no ChatGPT account. Those calls are that provider's
 * API money; imported as ChatGPT plan usage they left the spend totals and budgets. A provider of
 * the user's own that does use the login (`requires_openai_auth`) reaches the ChatGPT backend,
 * whose plan windows Codex writes in the events' `rate_limits`: plan usage still.
 */
const T = Date.parse('2026-11-20T10:00:00.000Z')
const usage = { input_tokens: 5000, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 }
const noPlan = { limit_id: 'codex', limit_name: null, primary: null, secondary: null, credits: null, individual_limit: null, spend_control_reached: null, plan_type: null, rate_limit_reached_type: null }
const planWindows = { ...noPlan, primary: { used_percent: 12.5, window_minutes: 300, resets_at: 1796554581 }, secondary: { used_percent: 40, window_minutes: 10080, resets_at: 1796810181 } }
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-login-provider-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** One `codex exec` turn's rollout, its lines as the real Codex 0.171 wrote them (trimmed) with a ChatGPT login stored. */
function rollout(provider: string, model: string, rateLimits: object): string {
  const root = join(dir, 'sessions')
  const id = '01a24ac7-c1ab-76f2-a22f-367758f27e1c'
  mkdirSync(join(root, '2026/11/20'), { recursive: true })
  writeFileSync(join(root, `2026/11/20/rollout-2026-11-20T10-00-00-${id}.jsonl`), [
    { timestamp: new Date(T).toISOString(), ordinal: 0, type: 'session_meta', payload: {
      account_scoped: true, creator_user_id: 'user-1', creator_account_id: 'acct-1', session_id: id, id, timestamp: new Date(T).toISOString(),
      cwd: '/home/dev/api', originator: 'codex_exec', cli_version: '0.171.0', source: 'exec', thread_source: 'user', model_provider: provider, history_mode: 'paginated' } },
    { timestamp: new Date(T + 100).toISOString(), ordinal: 5, type: 'turn_context', payload: { cwd: '/home/dev/api', approval_policy: 'never', model } },
    { timestamp: new Date(T + 200).toISOString(), ordinal: 6, type: 'event_msg', payload: { type: 'thread_settings_applied', thread_id: id, thread_settings: { model, model_provider_id: provider } } },
    { timestamp: new Date(T + 2000).toISOString(), ordinal: 12, type: 'event_msg', payload: { type: 'token_count',
      info: { total_token_usage: usage, last_token_usage: usage, last_usage_includes_reasoning: false, model_context_window: 258400 }, rate_limits: rateLimits } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
  return root
}

/** `burnrate import codex` of those logs into a new ledger file: its call, and today's money and plan value. */
async function imported(root: string) {
  const r = await runCliCaptured('import', 'codex', '--path', root, '--data-dir', join(dir, 'data'), '--local', '--json')
  expect(r.code, r.out).toBe(0)
  expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 1 })
  const db = new BetterSqlite(join(dir, 'data/burnrate.db'), { readonly: true })
  try {
    const call = db.prepare('SELECT provider, billing, priced, cost_usd FROM calls').get() as { provider: string; billing: string; priced: number; cost_usd: number }
    const day = db.prepare('SELECT sum(cost_usd) AS money, sum(plan_value_usd) AS plan FROM dash_day').get() as { money: number; plan: number }
    return { call, day }
  } finally {
    db.close()
  }
}

async function price(provider: string, pricingId: string, model: string) {
  const pricer = new Pricer()
  await pricer.ready()
  return pricer.price(provider, pricingId, model, { input_tokens: 5000, output_tokens: 400, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, web_searches: 0, storage_searches: 0 }, new Date(T))
}

it("Codex on OpenRouter beside a ChatGPT login: OpenRouter's API money, not plan usage", async () => {
  const want = await price('openrouter', 'openrouter', 'anthropic/claude-sonnet-4.5')
  expect(want.priced && want.cost_usd > 0).toBe(true)
  const { call, day } = await imported(rollout('openrouter', 'anthropic/claude-sonnet-4.5', noPlan))
  expect(call).toEqual({ provider: 'openrouter', billing: 'api', priced: 1, cost_usd: want.cost_usd })
  expect(day).toEqual({ money: want.cost_usd, plan: 0 })
})

it('Codex on a provider of its own with an OpenAI API key, beside a ChatGPT login: OpenAI API money', async () => {
  const want = await price('openai', 'openai', 'gpt-5-codex')
  const { call, day } = await imported(rollout('burnrate', 'gpt-5-codex', noPlan))
  expect(call).toEqual({ provider: 'openai', billing: 'api', priced: 1, cost_usd: want.cost_usd })
  expect(day).toEqual({ money: want.cost_usd, plan: 0 })
})

it("Codex on a provider of its own that uses the ChatGPT login (the backend's plan windows in its events): plan usage", async () => {
  const { call, day } = await imported(rollout('burnrate', 'gpt-5-codex', planWindows))
  expect(call).toMatchObject({ provider: 'chatgpt', billing: 'subscription' })
  expect(day).toEqual({ money: 0, plan: call.cost_usd })
})
