import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { keyHint } from '../../src/shared/key-hint'
import { alertsOf } from '../../src/main/alerts'
import { SqliteAnnounced } from '../../src/main/budgets/announced'
import type { ThresholdEvent } from '../../src/main/budgets/announcer'
import { BudgetEngine } from '../../src/main/budgets/engine'
import type { HistoryRow } from '../../src/main/budgets/meter-book'
import type { Rule } from '../../src/main/budgets/rules'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { openai } from '../../src/main/providers/openai'
import { hashKey } from '../../src/main/proxy/attribution'
import type { CallContext } from '../../src/main/proxy/gate'
import { callsOf } from '../budgets/support'
import { type Answers, backgroundBody, backgroundResponder } from '../providers/background-support'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { type Receiver, receiver } from './support'

// A threshold is announced once per calendar period (README: Alerts). Burnrate knew after a
// restart only the thresholds the recorded spend was still over: spend that fell back in the same
// day (a background job that failed, billed nothing, its estimate taken back; a re-price) and
// crossed the threshold again sent the same Slack or webhook alert a second time that day, where
// the same server left running sent it once.

const answers: Answers = new Map()
let upstream: MockUpstream
let hook: Receiver

beforeAll(async () => {
  upstream = await startMockUpstream(backgroundResponder(answers))
  hook = await receiver()
})
afterAll(async () => {
  await hook.close()
  await upstream.close()
})

const KEY = 'sk-annc-aaaaaaaaaaaa-0001'
// A queued deep-research job is recorded at its prompt's estimate ($0.00012): 60% of this limit.
const CONFIG = (url: string) => ({
  timezone: 'UTC',
  alerts: { webhooks: [{ url: `${url}/hook` }], retries: 0 },
  budgets: { rules: [{ api_key_pattern: 'sk-annc-*', daily_limit_usd: 0.0002, action: 'warn' }] },
})

const job = (t: TestServer, id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters in space.', background: true, metadata: { id } }, { authorization: `Bearer ${KEY}` })

/** The thresholds the webhook got, once every delivery of `t` has ended. */
async function thresholdsSent(t: TestServer, count: number): Promise<number[]> {
  const sender = alertsOf(t.server.context).webhooks
  await eventually(() => hook.got.length >= count && sender.deliveries().every((d) => d.status !== 'pending'))
  return hook.got.filter((g) => g.body.type === 'budget.threshold').map((g) => g.body.threshold_pct)
}

describe('threshold alerts across a restart', () => {
  it('a threshold announced today is not sent again after a restart, though the spend fell back under it and crossed it again', async () => {
    let t = await startTestServer(CONFIG(hook.url), upstream.url)
    try {
      expect((await job(t, 'resp_annc_a')).status).toBe(200)
      expect(await thresholdsSent(t, 1)).toEqual([0.5])
      // It failed: nothing billed, its estimate taken back; the day's spend is $0 again.
      answers.set('resp_annc_a', { ...backgroundBody('resp_annc_a', 'failed', null), error: { code: 'server_error', message: 'The model failed.' } })
      expect((await request(`${t.url}/v1/responses/resp_annc_a`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
      await eventually(() => callsOf(t, KEY).length === 2 && callsOf(t, KEY).every((c) => c.cost_usd === 0))

      t = await t.restart()
      // 60% again: 50% was announced today already.
      expect((await job(t, 'resp_annc_b')).status).toBe(200)
      await eventually(() => callsOf(t, KEY).length === 3)
      // 120%: the thresholds not announced yet today are.
      expect((await job(t, 'resp_annc_c')).status).toBe(200)
      expect(await thresholdsSent(t, 4)).toEqual([0.5, 0.8, 0.9, 1])
    } finally {
      await t.cleanup()
    }
  })
})

describe('thresholds announced, kept in the ledger file', () => {
  const DAY = 86_400_000
  const DAY1 = Date.UTC(2026, 2, 10, 12)
  const rule = {
    ...DEFAULT_RULE_OPTIONS,
    api_key_pattern: 'sk-annc-*', daily_limit_usd: 10, monthly_limit_usd: null, action: 'warn', soft_limit_pct: null, source: 'runtime', created_at: null,
  } as Rule
  const ctx = (ts: number) =>
    ({
      provider: openai, shape: { endpoint: 'chat.completions', model: 'gpt-4o-mini', stream: false, billable: true },
      apiKey: KEY, apiKeyHash: hashKey(KEY), keyHint: keyHint(KEY), tenant: '', agent: '', session: '', ts, body: {}, bodyBytes: 10,
    }) as CallContext

  /** A Burnrate's budget engine started at `now` on the ledger file `file`, its meters from `history` (the recorded calls). */
  function start(file: string, history: HistoryRow[], now: number) {
    const db = openDatabase(file)
    const ledger = new Ledger(db, { flushIntervalMs: 10, maxPending: 100, timezone: 'UTC' })
    const engine = new BudgetEngine('UTC', 1, [], [rule], { worstCase: () => 0, expected: () => 0, learn: () => {} }, () => history)
    const announced = new SqliteAnnounced(db, ledger)
    engine.keepAnnounced(announced)
    engine.rememberAnnounced(announced.load(now), now)
    engine.reload(now)
    const seen: number[] = []
    engine.onThreshold((e: ThresholdEvent) => seen.push(e.pct))
    const call = (cost: number, ts: number) => {
      engine.admit(ctx(ts), ts).settle!()
      engine.observe({
        ts, provider: 'openai', model: 'gpt-4o-mini', api_key_hash: hashKey(KEY), key_hint: keyHint(KEY),
        tenant: '', agent: '', session: '', cost_usd: cost, status: 200, input_tokens: 0, output_tokens: 0,
      } as unknown as CallRecord, ts)
    }
    const stop = () => {
      ledger.close()
      db.close()
    }
    return { db, seen, call, stop }
  }

  it('are not announced again in their period after a restart, and are again in the next period', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-announced-'))
    const file = join(dir, 'burnrate.db')
    try {
      const first = start(file, [], DAY1)
      first.call(6, DAY1) // 60% of $10
      expect(first.seen).toEqual([0.5])
      first.stop()

      // The $6 re-priced to $0 meanwhile: the spend read back is under 50%, and crosses it again.
      const second = start(file, [], DAY1 + 60_000)
      second.call(6, DAY1 + 60_000)
      expect(second.seen).toEqual([])
      second.call(3, DAY1 + 120_000) // 90%: not announced before
      expect(second.seen).toEqual([0.8, 0.9])
      second.stop()

      // The next day is a new period: its thresholds are announced, and those of the day before are forgotten.
      const third = start(file, [], DAY1 + DAY)
      third.call(6, DAY1 + DAY)
      expect(third.seen).toEqual([0.5])
      third.stop()
      const db = openDatabase(file)
      try {
        expect((db.prepare('SELECT until FROM budget_announced').all() as { until: number }[]).map((r) => r.until)).toEqual([Date.UTC(2026, 2, 12)])
      } finally {
        db.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
