import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { RollupWriter } from '../../src/main/dashboard/rollup/writer'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { hashKey } from '../../src/main/proxy/attribution'
import { keyHint } from '../../src/shared/key-hint'
import { makeCall } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * A session cap counts the whole session, however long ago it began, also after a restart or a
 * rule change (it is read back from the session's calls). With `ledger.retention_days`, the calls
 * of a session still in use are kept, whatever their age; a session idle for the budgets' 7 days
 * is pruned as any call. Before, retention pruned a long session's early calls and, after the
 * next restart, its cap counted only what was left: $155 of $200, and the agent got through.
 */

const KEY = 'sk-team-retention-session-0001'
const DAY = 86_400_000
let upstream: MockUpstream
let dir: string

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  dir = mkdtempSync(join(tmpdir(), 'burnrate-session-retention-'))
  const db = openDatabase(join(dir, DB_FILE))
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
  const writer = new RollupWriter(db)
  ledger.onBatch((rows) => writer.onBatch(rows))
  const now = Date.now()
  const who = { api_key_hash: hashKey(KEY), key_hint: keyHint(KEY) }
  // $5 a day for 40 days in one session, in use up to yesterday: $200 against a $180 cap.
  for (let d = 40; d >= 1; d--) ledger.record(makeCall({ ts: now - d * DAY, ...who, session: 'long-one', cost_usd: 5 }))
  // Another session, idle for 30 days: its calls past retention go.
  for (let d = 60; d >= 30; d--) ledger.record(makeCall({ ts: now - d * DAY, ...who, session: 'idle-one', cost_usd: 1 }))
  ledger.close()
  db.close()
})
afterAll(async () => {
  await upstream?.close()
  rmSync(dir, { recursive: true, force: true })
})

const config = (retention: number | null) => ({
  ledger: { retention_days: retention },
  budgets: { rules: [{ api_key_pattern: 'sk-team-*', session_limit_usd: 180, action: 'block' }] },
})
const call = (url: string) => postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${KEY}`, 'x-burnrate-session': 'long-one' })
const session = (name: string) => ledgerRows(join(dir, DB_FILE), `session = '${name}'`)

describe('a session cap with ledger.retention_days', () => {
  it('still counts the whole session after pruning and a restart', async () => {
    let t = await startTestServer(config(32), upstream.url, dir)
    // Pruning ran: the idle session lost its calls past 32 days; the one in use kept all 40.
    await eventually(() => session('idle-one').every((c) => c.ts >= Date.now() - 33 * DAY), 30_000)
    expect(session('long-one')).toHaveLength(40)
    await t.stop()
    t = await startTestServer(config(32), upstream.url, dir)
    try {
      expect((await call(t.url)).status).toBe(429)
    } finally {
      await t.stop()
    }
  }, 90_000)
})
