import Database from 'better-sqlite3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_FIXTURE, chat, replayJson } from './support'

// The per-minute limits count what the proxy admitted and what ended in the last minute. A restart
// rebuilds the meters from the ledger: a restart must not hand a key a fresh minute (an agent
// restarted with its proxy, or a crash loop, would go through its rate limit every time).

let upstream: MockUpstream
let servers: TestServer[] = []
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterEach(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  servers = []
})
afterAll(async () => {
  await upstream?.close()
})

/** Copies of the key's first recorded call, as further rows of the ledger (`set` names their columns' values). */
function copyCall(file: string, set: Record<string, string | number>, n = 1): void {
  const db = new Database(file)
  try {
    const cols = (db.prepare('PRAGMA table_info(calls)').all() as { name: string }[]).map((c) => c.name).filter((c) => c !== 'id')
    const pick = cols.map((c) => (c in set ? `@${c}` : c)).join(', ')
    const copy = db.prepare(`INSERT INTO calls (${cols.join(', ')}) SELECT ${pick} FROM calls ORDER BY id LIMIT 1`)
    for (let i = 0; i < n; i++) copy.run(set)
  } finally {
    db.close()
  }
}

describe('per-minute limits across a restart', () => {
  it('requests_per_minute counts the requests admitted before the restart, not the refusals or free reads', async () => {
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rr-*', requests_per_minute: 3, action: 'block' }] } }
    const t = await startTestServer(config, upstream.url)
    servers.push(t)
    const key = 'sk-rr-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    expect(await t.server.ledger.flushed()).toBe(true)
    await t.stop()
    // Refusals by Burnrate never went upstream, and a read of a stored response is free: neither is a request.
    const now = Date.now()
    copyCall(t.dbFile, { ts: now, error: 'rate_limited', status: 429, input_tokens: 0, output_tokens: 0, cost_usd: 0 }, 3)
    copyCall(t.dbFile, { ts: now, error: 'budget_exceeded', status: 429, input_tokens: 0, output_tokens: 0, cost_usd: 0 })
    copyCall(t.dbFile, { ts: now, endpoint: 'responses.retrieve', cost_usd: 0 })

    const again = await startTestServer(config, upstream.url, t.dir)
    servers.push(again)
    expect((await chat(again, key)).status).toBe(200)
    expect((await chat(again, key)).status).toBe(200)
    const refused = await chat(again, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'requests_per_minute', limit: 3, used: 3 })
  }, 60_000)

  it('tokens_per_minute counts a long call that ended in the last minute, at the moment it ended', async () => {
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-rt-*', tokens_per_minute: 200, action: 'block' }] } }
    const t = await startTestServer(config, upstream.url)
    servers.push(t)
    const key = 'sk-rt-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200) // 11 + 228 tokens: over the limit from now for a minute
    expect(await t.server.ledger.flushed()).toBe(true)
    await t.stop()
    // The call arrived 90 s ago and its stream ended 5 s ago.
    const ended = Date.now() - 5_000
    const db = new Database(t.dbFile)
    db.prepare('UPDATE calls SET ts = ?, latency_ms = ?').run(ended - 85_000, 85_000)
    db.close()

    const again = await startTestServer(config, upstream.url, t.dir)
    servers.push(again)
    const refused = await chat(again, key)
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'rate_limited', unit: 'tokens_per_minute', limit: 200, used: 239 })
    // Free again a minute after the call ended, not a minute after the restart.
    expect(Date.parse(refused.json().error.resets_at)).toBeLessThanOrEqual(ended + 60_000 + 1_000)
  }, 60_000)
})
