import { readFileSync, statSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillFiles } from '../../src/main/reliability/spill'
import { NANO_FIXTURE, replayJson } from '../budgets/support'
import { type BuiltServer, lockFromAnotherProcess, startBuiltServer } from '../load/harness'
import { eventually, postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

/**
 * SQLite: calls answered while the database file cannot be written (another process holds its
 * lock; a full disk, a read-only file alike) wait in memory. A process killed outright then
 * (SIGKILL, an OOM kill, a power cut: no shutdown runs) lost every one of them, as only a clean
 * stop wrote them to a spill file. They are appended to a journal (a spill file) while the writes
 * fail, as the PostgreSQL ledger does, so the next start stores each once. Against the built
 * server (out/main/cli.js).
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
})
afterAll(() => upstream.close())

const KEY = 'sk-journal-aaaaaaaaaaaa-0001'
const config = { timezone: 'UTC', pricing: { auto_update: false } }

/** How many rows each session has in the ledger file. */
function sessionCounts(dbFile: string): Record<string, number> {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare('SELECT session, count(*) AS n FROM calls GROUP BY session ORDER BY session').all() as { session: string; n: number }[]
    return Object.fromEntries(rows.map((r) => [r.session, r.n]))
  } finally {
    db.close()
  }
}

/** The sessions of the calls the data folder's spill files hold. */
function spilledSessions(dir: string): string[] {
  const out: string[] = []
  for (const f of spillFiles(dir)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      try {
        const r = JSON.parse(line)
        if (r && typeof r.session === 'string') out.push(r.session)
      } catch {}
    }
  }
  return out
}

async function call(t: BuiltServer, session: string): Promise<void> {
  const r = await postJson(
    `${t.url}/v1/chat/completions`,
    { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100 },
    { authorization: `Bearer ${KEY}`, 'x-burnrate-session': session },
  )
  expect(r.status).toBe(200)
}

const health = async (t: BuiltServer) => (await request(`${t.url}/api/health`)).json()
const WAITING = ['w1', 'w2', 'w3', 'w4', 'w5']

describe('SIGKILL while the SQLite file cannot be written', () => {
  it('loses none of the calls waiting for it: the next start stores each once', async () => {
    const first = await startBuiltServer(config, upstream.url)
    let again: BuiltServer | null = null
    try {
      await call(first, 'before')
      await eventually(() => sessionCounts(first.dbFile).before === 1, 10_000)
      const lock = await lockFromAnotherProcess(first.dbFile)
      try {
        for (const s of WAITING) await call(first, s)
        await eventually(async () => {
          const h = await health(first)
          return h.ledger.pending === WAITING.length && h.ledger.writable === false
        }, 20_000)
        // Each waiting call reaches the disk within a tick of the refused write; then the kill.
        await eventually(() => WAITING.every((s) => spilledSessions(first.dataDir).includes(s)), 15_000)
        const [file] = spillFiles(first.dataDir)
        expect(statSync(file).mode & 0o777).toBe(0o600)
        await first.kill('SIGKILL')
      } finally {
        await lock.release()
      }
      again = await startBuiltServer(config, upstream.url, first.dataDir)
      await eventually(() => spillFiles(first.dataDir).length === 0, 10_000)
      expect(sessionCounts(first.dbFile)).toEqual({ before: 1, w1: 1, w2: 1, w3: 1, w4: 1, w5: 1 })
      expect((await request(`${again.url}/api/dashboard/summary`)).json().today_requests).toBe(6)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 90_000)

  it('removes the journal once the database takes its calls, and a journal left by a kill then stores nothing twice', async () => {
    const first = await startBuiltServer(config, upstream.url)
    let again: BuiltServer | null = null
    let journal: string
    let bytes: Buffer
    try {
      await call(first, 'before')
      await eventually(() => sessionCounts(first.dbFile).before === 1, 10_000)
      const lock = await lockFromAnotherProcess(first.dbFile)
      try {
        for (const s of WAITING) await call(first, s)
        await eventually(() => WAITING.every((s) => spilledSessions(first.dataDir).includes(s)), 20_000)
        ;[journal] = spillFiles(first.dataDir)
        bytes = readFileSync(journal)
      } finally {
        await lock.release()
      }
      // The database takes them again, and the journal goes then.
      await eventually(() => Object.keys(sessionCounts(first.dbFile)).length === 6, 20_000)
      await eventually(() => spillFiles(first.dataDir).length === 0, 20_000)
      // A kill between the two leaves the journal as it was: its calls are not stored twice.
      writeFileSync(journal, bytes, { mode: 0o600 })
      await first.kill('SIGKILL')
      again = await startBuiltServer(config, upstream.url, first.dataDir)
      await eventually(() => spillFiles(first.dataDir).length === 0, 10_000)
      expect(sessionCounts(first.dbFile)).toEqual({ before: 1, w1: 1, w2: 1, w3: 1, w4: 1, w5: 1 })
      const h = await health(again)
      expect(h.ledger.pending).toBe(0)
      expect((await request(`${again.url}/api/dashboard/summary`)).json().today_requests).toBe(6)
    } finally {
      if (again) {
        await again.stop()
        await again.dispose()
      } else await first.dispose()
    }
  }, 90_000)
})
