import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'

/**
 * Codex logged in with ChatGPT writes its plan's rate limits into each token_count event
 * (`rate_limits.plan_type`, codex-rs RateLimitSnapshot): its calls are plan usage, imported as
 * the proxy records them, never as API money.
 */
const pricer = new Pricer()
const T = Date.parse('2026-11-20T10:00:00.000Z')
let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-plan-'))
  db = openDatabase(join(dir, 'b.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const usage = (input: number, output: number) => ({ input_tokens: input, cached_input_tokens: 0, output_tokens: output, reasoning_output_tokens: 0, total_tokens: input + output })
const LIMITS = { primary: { used_percent: 3, window_minutes: 300, resets_at: 1790000000 }, secondary: { used_percent: 1, window_minutes: 10080, resets_at: 1790500000 } }

/** A Codex 0.171 rollout: two responses; the plan's rate limits (or none: an API key) on the second event only; `meta`: more of session_meta. */
function rollout(rateLimits: object | null, meta: object = {}) {
  const root = join(dir, 'sessions')
  mkdirSync(join(root, '2026/11/20'), { recursive: true })
  writeFileSync(join(root, '2026/11/20/rollout-2026-11-20T10-00-00-abc.jsonl'), [
    { timestamp: new Date(T).toISOString(), type: 'session_meta', payload: { id: 'abc', cwd: '/home/dev/x', originator: 'codex_cli_rs', ...meta } },
    { timestamp: new Date(T).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-codex', cwd: '/home/dev/x' } },
    { timestamp: new Date(T + 1000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
      total_token_usage: usage(5000, 400), last_token_usage: usage(5000, 400), model_context_window: 272000 }, rate_limits: null } },
    { timestamp: new Date(T + 9000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
      total_token_usage: usage(11000, 900), last_token_usage: usage(6000, 500), model_context_window: 272000 }, rate_limits: rateLimits } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
  return root
}
const calls = () => db.prepare('SELECT provider, billing, cost_usd, source FROM calls ORDER BY ts').all() as any[]

describe('Codex logs of a ChatGPT login', () => {
  it('are plan usage (provider chatgpt, billing subscription, at their API-equivalent value), every call of the session', async () => {
    const s = await importLogs(db, { agent: 'codex', paths: [rollout({ ...LIMITS, plan_type: 'plus' })], pricer, now: T + 3_600_000 })
    expect(s.imported).toBe(2)
    const r = calls()
    expect(r.map((c) => [c.provider, c.billing, c.source])).toEqual([['chatgpt', 'subscription', 'import'], ['chatgpt', 'subscription', 'import']])
    expect(r[0].cost_usd).toBeGreaterThan(0)
    // Not today's money: the dashboard counts it as plan value.
    expect(db.prepare('SELECT sum(cost_usd) AS money, sum(plan_value_usd) AS plan FROM dash_day').get()).toEqual({ money: 0, plan: r[0].cost_usd + r[1].cost_usd })
  })

  it('a session whose first line names the ChatGPT account is plan usage, with no rate limits in any event (as the real Codex 0.171 writes it)', async () => {
    const s = await importLogs(db, { agent: 'codex', paths: [rollout(null, { account_scoped: true, creator_user_id: 'user-1', creator_account_id: 'acct-1' })], pricer, now: T + 3_600_000 })
    expect(s.imported).toBe(2)
    expect(calls().map((c) => [c.provider, c.billing])).toEqual([['chatgpt', 'subscription'], ['chatgpt', 'subscription']])
  })

  it('an older Codex that wrote the plan windows without a plan type is plan usage (only the ChatGPT backend sends them)', async () => {
    await importLogs(db, { agent: 'codex', paths: [rollout(LIMITS)], pricer, now: T + 3_600_000 })
    expect(calls().map((c) => [c.provider, c.billing])).toEqual([['chatgpt', 'subscription'], ['chatgpt', 'subscription']])
  })

  it('an API key (no account in session_meta, rate limits without a plan or a window, as the real Codex writes them) is money', async () => {
    const none = { limit_id: 'codex', limit_name: null, primary: null, secondary: null, credits: null, individual_limit: null, spend_control_reached: null, plan_type: null, rate_limit_reached_type: null }
    await importLogs(db, { agent: 'codex', paths: [rollout(none)], pricer, now: T + 3_600_000 })
    expect(calls().map((c) => [c.provider, c.billing])).toEqual([['openai', 'api'], ['openai', 'api']])
  })

  it('matched to the call the proxy recorded from the ChatGPT backend, not stored twice', async () => {
    db.prepare(INSERT_CALL_SQL).run(callValues(makeCall({
      ts: T + 500, provider: 'chatgpt', billing: 'subscription', model: 'gpt-5-codex', endpoint: 'responses', agent: 'codex', source: 'proxy',
      response_id: '', input_tokens: 5000, output_tokens: 400, cost_usd: 0.01,
    }), []))
    const s = await importLogs(db, { agent: 'codex', paths: [rollout({ ...LIMITS, plan_type: 'pro' })], pricer, now: T + 3_600_000 })
    expect(s).toMatchObject({ matched: 1, imported: 1 })
    expect(calls().map((c) => [c.provider, c.billing, c.source])).toEqual([['chatgpt', 'subscription', 'proxy'], ['chatgpt', 'subscription', 'import']])
  })
})
