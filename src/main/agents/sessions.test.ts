import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../ledger/db'
import { SqliteStore } from '../storage/sqlite'
import { SESSION_GAP_MS, SessionInference } from './sessions'

const MIN = 60_000
const T0 = Date.UTC(2026, 10, 21, 9, 0, 0)

describe('SessionInference', () => {
  it('keeps one session while calls are less than 30 minutes apart, however long the run', () => {
    const s = new SessionInference()
    const first = s.assign('codex', 'k1', T0)
    expect(first).toMatch(/^auto-[0-9a-f]{12}$/)
    // 10 calls 29 minutes apart: a run of 4.35 hours, one session.
    for (let i = 1; i <= 10; i++) expect(s.assign('codex', 'k1', T0 + i * 29 * MIN)).toBe(first)
  })

  it('starts a new session after a gap of 30 minutes or more', () => {
    const s = new SessionInference()
    const first = s.assign('codex', 'k1', T0)
    expect(SESSION_GAP_MS).toBe(30 * MIN)
    const second = s.assign('codex', 'k1', T0 + 30 * MIN)
    expect(second).not.toBe(first)
    expect(s.assign('codex', 'k1', T0 + 30 * MIN + 29 * MIN)).toBe(second)
  })

  it('separates agents and keys', () => {
    const s = new SessionInference()
    const a = s.assign('aider', 'k1', T0)
    expect(s.assign('aider', 'k2', T0 + 1)).not.toBe(a)
    expect(s.assign('cursor', 'k1', T0 + 2)).not.toBe(a)
    expect(s.assign('aider', 'k1', T0 + 3)).toBe(a)
  })

  it('a call that arrives slightly out of order still joins its session', () => {
    const s = new SessionInference()
    const a = s.assign('aider', 'k1', T0 + 10 * MIN)
    expect(s.assign('aider', 'k1', T0 + 9 * MIN)).toBe(a)
    expect(s.assign('aider', 'k1', T0 + 39 * MIN)).toBe(a)
  })

  it('is bounded: the least recently used entries are dropped first', () => {
    const s = new SessionInference(SESSION_GAP_MS, 3)
    const a = s.assign('x', 'a', T0)
    s.assign('x', 'b', T0)
    s.assign('x', 'c', T0)
    expect(s.assign('x', 'a', T0 + 1)).toBe(a) // a is now the most recent
    s.assign('x', 'd', T0 + 2) // drops b
    expect(s.size).toBe(3)
    expect(s.assign('x', 'a', T0 + 3)).toBe(a)
  })

  it('runs of calls from one agent and key keep the least-recently-used order and the gap', () => {
    const s = new SessionInference(SESSION_GAP_MS, 2)
    const a = s.assign('x', 'a', T0)
    expect(s.assign('x', 'a', T0 + 1)).toBe(a)
    const b = s.assign('x', 'b', T0 + 2)
    expect(s.assign('x', 'b', T0 + 3)).toBe(b)
    expect(s.assign('x', 'a', T0 + 4)).toBe(a) // a is now the most recent
    expect(s.assign('x', 'a', T0 + 5)).toBe(a)
    s.assign('x', 'c', T0 + 6) // drops b, not a
    expect(s.assign('x', 'a', T0 + 7)).toBe(a)
    expect(s.assign('x', 'b', T0 + 8)).not.toBe(b)
    const later = s.assign('x', 'b', T0 + 8 + 30 * MIN)
    expect(later).not.toBe(b)
    expect(s.assign('x', 'b', T0 + 9 + 30 * MIN)).toBe(later)
  })

  describe('seed', () => {
    let dir = ''
    afterEach(() => rmSync(dir, { recursive: true, force: true }))

    it('reopens inferred sessions whose last call is within the gap, and only those', async () => {
      dir = mkdtempSync(join(tmpdir(), 'burnrate-sessions-'))
      const db = openDatabase(join(dir, 'burnrate.db'))
      const insert = db.prepare(
        `INSERT INTO calls (ts, provider, model, endpoint, api_key_hash, key_hint, tenant, agent, session, status, streamed,
          input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens, reasoning_tokens,
          cost_usd, priced, estimated, latency_ms, error)
         VALUES (?, 'openai', 'gpt-4o', 'chat.completions', ?, '', '', ?, ?, 200, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, NULL)`,
      )
      const now = T0 + 60 * MIN
      insert.run(now - 50 * MIN, 'k1', 'aider', 'auto-aaaaaaaaaaaa')
      insert.run(now - 10 * MIN, 'k1', 'aider', 'auto-bbbbbbbbbbbb') // the open one
      insert.run(now - 40 * MIN, 'k2', 'aider', 'auto-cccccccccccc') // closed: too old
      insert.run(now - 5 * MIN, 'k3', 'claude-code', '0f4c2a8e-6b1d-4e3f-9a7c-2d5e8b1f4a6c') // the client's own id
      const s = new SessionInference()
      await s.seed(new SqliteStore(db), now)
      db.close()
      expect(s.size).toBe(1)
      expect(s.assign('aider', 'k1', now)).toBe('auto-bbbbbbbbbbbb')
      expect(s.assign('aider', 'k2', now)).not.toBe('auto-cccccccccccc')
    })
  })
})
