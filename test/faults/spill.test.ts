import { existsSync, readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { spillFiles, writeSpill } from '../../src/main/reliability/spill'
import { makeCall } from '../dashboard/seed'
import { lockFromAnotherProcess } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/** Stopping while the database cannot be written loses nothing: the calls wait in a file for the next start. */

let upstream: MockUpstream

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

function sessions(file: string): string[] {
  const db = new Database(file, { readonly: true })
  try {
    return (db.prepare('SELECT session FROM calls ORDER BY id').all() as { session: string }[]).map((r) => r.session)
  } finally {
    db.close()
  }
}

describe('a stop while the database is locked', () => {
  it('keeps the waiting calls in a spill file (hashes, no keys) and writes them at the next start', async () => {
    const key = 'sk-spill-SPILLSECRETKEY-000000001'
    const t = await startTestServer({}, upstream.url)
    const call = (session: string) =>
      postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: `Bearer ${key}`, 'x-burnrate-session': session })
    expect((await call('before')).status).toBe(200)
    await eventually(() => sessions(t.dbFile).length === 1)
    const lock = await lockFromAnotherProcess(t.dbFile)
    try {
      for (const s of ['s1', 's2', 's3']) expect((await call(s)).status).toBe(200)
      await t.stop()
      const files = spillFiles(t.dir)
      expect(files).toHaveLength(1)
      const text = readFileSync(files[0], 'utf8')
      expect(text.trim().split('\n')).toHaveLength(3)
      expect(text).not.toContain('SPILLSECRETKEY')
    } finally {
      await lock.release()
    }
    const again = await startTestServer({}, upstream.url, t.dir)
    try {
      expect(spillFiles(t.dir)).toEqual([])
      expect(sessions(t.dbFile)).toEqual(['before', 's1', 's2', 's3'])
      expect((await request(`${again.url}/api/health`)).json().status).toBe('ok')
      // The recovered calls count in the dashboard too.
      const summary = (await request(`${again.url}/api/dashboard/summary`)).json()
      expect(summary.today_requests).toBe(4)
    } finally {
      await again.cleanup()
    }
    expect(existsSync(t.dir)).toBe(false)
  })
})

describe('a spill file holding more calls than ledger.max_pending', () => {
  it('is written whole at the next start, and only then removed', async () => {
    // Left by a run with a larger bound (or a stop whose queue had outgrown it); this start has a smaller one.
    const first = await startTestServer({})
    await first.stop()
    const n = 300
    writeSpill(first.dir, Array.from({ length: n }, (_, i) => makeCall({ ts: Date.now() - 60_000 + i, cost_usd: 0.01, session: `s${i}` })))
    const lines: string[] = []
    const again = await startTestServer({ ledger: { max_pending: 100 } }, undefined, first.dir, { log: createLogger('info', (l) => lines.push(l)) })
    try {
      expect(spillFiles(first.dir)).toEqual([])
      const stored = sessions(again.dbFile)
      expect(stored).toHaveLength(n)
      expect(new Set(stored).size).toBe(n)
      expect(lines.filter((l) => l.includes('recovered'))).toEqual([expect.stringContaining(`recovered ${n} call(s)`)])
      expect((await request(`${again.url}/api/health`)).json().ledger.dropped).toBe(0)
    } finally {
      await again.cleanup()
    }
  })
})
