import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { spillFiles } from '../../src/main/reliability/spill'
import { type Receiver, receiver } from '../alerts/support'
import { type BuiltServer, lockFromAnotherProcess, startBuiltServer } from '../load/harness'
import { type Answers, backgroundResponder } from '../providers/background-support'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

/**
 * SQLite: the rows the ledger writes with its calls (a background job's budget hold, the rule
 * patterns a key was seen to match, a budget threshold announced) wait in memory with the calls
 * while the database file cannot be written. The journal kept only the calls: a process killed
 * outright then (SIGKILL, an OOM kill) lost the rows, so after the restart a `block` rule let
 * through the spend the running job had reserved, and a threshold was announced a second time in
 * its period. They are journalled with the calls, and the next start writes them. Against the
 * built server (out/main/cli.js).
 */

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

const KEY = 'sk-sidekill-aaaaaaaaaaaa-0001'
// A queued deep-research job is recorded at its prompt's estimate ($0.00012): 60% of this limit.
const config = (url: string) => ({
  timezone: 'UTC',
  pricing: { auto_update: false },
  alerts: { webhooks: [{ url: `${url}/hook` }], retries: 0 },
  budgets: { rules: [{ api_key_pattern: 'sk-sidekill-*', daily_limit_usd: 0.0002, action: 'block' }] },
})

const job = (t: BuiltServer, id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters in space.', background: true, metadata: { id } }, { authorization: `Bearer ${KEY}` })

/** The side rows (`{"side": …}` lines) the data folder's spill files hold. */
function spilledSide(dir: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (const f of spillFiles(dir)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      try {
        const r = JSON.parse(line)
        if (r && typeof r.side === 'object') out.push(r.side)
      } catch {}
    }
  }
  return out
}

function stored(dbFile: string) {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    return {
      calls: (db.prepare('SELECT count(*) AS n FROM calls').get() as { n: number }).n,
      holds: db.prepare('SELECT response_id FROM background_holds').pluck().all(),
      patterns: db.prepare('SELECT api_key_hash, pattern FROM key_patterns').all(),
      announced: (db.prepare('SELECT count(*) AS n FROM budget_announced').get() as { n: number }).n,
    }
  } finally {
    db.close()
  }
}

describe('SIGKILL while the SQLite file cannot be written', () => {
  it('loses none of the holds, key patterns and announced thresholds waiting with the calls: the next start writes them', async () => {
    const first = await startBuiltServer(config(hook.url), upstream.url)
    let again: BuiltServer | null = null
    try {
      const lock = await lockFromAnotherProcess(first.dbFile)
      try {
        expect((await job(first, 'resp_sidekill_a')).status).toBe(200)
        // 60% of the day's limit: the 50% threshold is announced.
        await eventually(() => hook.got.some((g) => g.body.type === 'budget.threshold'), 15_000)
        // Each waiting row reaches the journal within a tick of the refused write; then the kill.
        await eventually(() => {
          const side = spilledSide(first.dataDir)
          return ['hold', 'pattern', 'announced'].every((k) => side.some((w) => k in w))
        }, 20_000)
        await first.kill('SIGKILL')
      } finally {
        await lock.release()
      }
      again = await startBuiltServer(config(hook.url), upstream.url, first.dataDir)
      await eventually(() => spillFiles(first.dataDir).length === 0, 10_000)
      const s = stored(first.dbFile)
      expect(s.calls).toBe(1)
      expect(s.holds).toEqual(['resp_sidekill_a'])
      expect(s.patterns).toEqual([{ api_key_hash: hashKey(KEY), pattern: 'sk-sidekill-*' }])
      expect(s.announced).toBeGreaterThan(0)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 90_000)
})
