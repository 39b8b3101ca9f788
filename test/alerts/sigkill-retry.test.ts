import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { NANO_COST, NANO_FIXTURE, replayJson } from '../budgets/support'
import { startBuiltServer } from '../load/harness'
import { downOnceReceiver } from '../support/down-once-receiver'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

/**
 * A threshold's webhook alert whose retry was waiting when Burnrate was killed outright (SIGKILL,
 * a crash, the machine losing power: no shutdown ran) was lost on SQLite: the threshold was kept as
 * announced (budget_announced) with the ledger's writes, but the alert only at a clean shutdown,
 * so the next start took it as sent. Against the built server (out/main/cli.js).
 */

function rowsOf(dbFile: string, sql: string): number {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare(sql).get() as { n: number }).n
  } finally {
    db.close()
  }
}

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

const KEY = 'sk-kill-aaaaaaaaaaaa-0001'
const call = (base: string, key: string) =>
  postJson(`${base}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100 }, { authorization: `Bearer ${key}` })

describe('a webhook retry waiting when the server is killed (SQLite)', () => {
  it('is sent by the server started again, once', async () => {
    const hook = await downOnceReceiver()
    const config = {
      timezone: 'UTC',
      pricing: { auto_update: false },
      alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }], backoff_ms: 60_000, retries: 3 },
      budgets: { rules: [{ api_key_pattern: 'sk-kill-*', daily_limit_usd: NANO_COST * 2, action: 'warn', alert_at_pct: [0.5] }] },
    }
    const first = await startBuiltServer(config, upstream.url)
    let again: Awaited<ReturnType<typeof startBuiltServer>> | null = null
    try {
      expect((await call(first.url, KEY)).status).toBe(200)
      // The webhook refused the first attempt (its retry waits a minute), and the call and the
      // threshold's announcement are on disk: then the server dies without a shutdown.
      await eventually(() => hook.posts() === 1, 10_000)
      await eventually(() => rowsOf(first.dbFile, 'SELECT count(*) AS n FROM calls') === 1 && rowsOf(first.dbFile, 'SELECT count(*) AS n FROM budget_announced') > 0, 10_000)
      await first.kill('SIGKILL')
      again = await startBuiltServer(config, upstream.url, first.dataDir)
      await eventually(() => hook.got.length === 1, 10_000)
      expect(hook.got[0]).toMatchObject({ type: 'budget.threshold', threshold_pct: 0.5, api_key_hash: hashKey(KEY) })
      // Once: delivered, it is no longer kept (waited for on disk), and a start after that
      // server too is killed sends it no more.
      await eventually(() => rowsOf(first.dbFile, 'SELECT count(*) AS n FROM alert_outbox') === 0, 10_000)
      await again.kill('SIGKILL')
      const third = await startBuiltServer(config, upstream.url, first.dataDir)
      again = third
      // What its file kept is sent as it starts, and a webhook's alerts go in turn: a crossing of
      // another key now reaches the webhook after any such one, and the first alert came once.
      const later = 'sk-kill-bbbbbbbbbbbb-0001'
      expect((await call(third.url, later)).status).toBe(200)
      await eventually(() => hook.got.some((g) => g.api_key_hash === hashKey(later)), 10_000)
      expect(hook.got.map((g) => g.api_key_hash)).toEqual([hashKey(KEY), hashKey(later)])
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
      await hook.close()
    }
  }, 60_000)
})
