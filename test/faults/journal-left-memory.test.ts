import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillFiles } from '../../src/main/reliability/spill'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { lockFromAnotherProcess } from '../load/harness'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * SQLite: past `ledger.max_pending` calls waiting for a database that cannot be written, the oldest
 * leave memory. Those the journal already holds are not lost (the next start stores them), yet
 * /api/health and /metrics counted them `dropped`, with the log saying they were dropped. They are
 * counted as what they are, `left_on_disk`; `dropped` counts only calls gone for good.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(() => upstream.close())

const config = { ledger: { max_pending: 5 }, metrics: { enabled: true } }

async function call(t: TestServer, session: string): Promise<void> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-left-disk-000000001', 'x-burnrate-session': session })
  expect(r.status).toBe(200)
}

function sessions(file: string): string[] {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT session FROM calls ORDER BY session').pluck().all() as string[]
  } finally {
    db.close()
  }
}

function journalled(dir: string): string[] {
  const out: string[] = []
  for (const f of spillFiles(dir)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      try {
        const r = JSON.parse(line)
        if (typeof r?.session === 'string') out.push(r.session)
      } catch {}
    }
  }
  return out
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])

describe('calls past ledger.max_pending that the journal holds', () => {
  it('are counted left_on_disk, not dropped, and the next start stores them', async () => {
    let t = await startTestServer(config, upstream.url)
    try {
      const lock = await lockFromAnotherProcess(t.dbFile)
      try {
        const first = ['a1', 'a2', 'a3', 'a4', 'a5']
        for (const s of first) await call(t, s)
        await eventually(() => first.every((s) => journalled(t.dir).includes(s)), 15_000)
        // Three more: the three oldest leave memory, on disk already.
        for (const s of ['b1', 'b2', 'b3']) await call(t, s)
        const h = (await request(`${t.url}/api/health`)).json()
        expect(h.ledger).toMatchObject({ writable: false, pending: 5, dropped: 0, left_on_disk: 3 })
        const text = (await request(`${t.url}/metrics`)).body.toString()
        expect(metric(text, 'burnrate_ledger_dropped_total')).toBe(0)
        expect(metric(text, 'burnrate_ledger_left_on_disk_total')).toBe(3)
        expect(metric(text, 'burnrate_ledger_left_on_disk_waiting')).toBe(3)
      } finally {
        await lock.release()
      }
      // The five in memory are stored; the journal stays for the three that left memory.
      await eventually(() => sessions(t.dbFile).length === 5, 15_000)
      expect(sessions(t.dbFile)).toEqual(['a4', 'a5', 'b1', 'b2', 'b3'])
      await eventually(() => (t.server.ledger.status.pending === 0 && spillFiles(t.dir).length === 1), 15_000)
      // Still on disk only (stored at the next start): still said so.
      expect((await request(`${t.url}/api/health`)).json().ledger).toMatchObject({ writable: true, dropped: 0, left_on_disk: 3 })
      t = await t.restart()
      await eventually(() => spillFiles(t.dir).length === 0, 10_000)
      expect(sessions(t.dbFile)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'b1', 'b2', 'b3'])
      // Stored: nothing waits on disk any more.
      expect((await request(`${t.url}/api/health`)).json().ledger).toMatchObject({ writable: true, dropped: 0, left_on_disk: 0 })
    } finally {
      await t.cleanup()
    }
  }, 60_000)
})
