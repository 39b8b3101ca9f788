import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CallRecord } from '../../src/main/ledger/record'
import { createLogger } from '../../src/main/log'
import { SpillCut, readSpill, rewriteSpill, spillFiles, writeSpill } from '../../src/main/reliability/spill'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'
import { canMount, fillDisk, mountTmpfs, unmount } from '../support/tmpfs'

/**
 * A stop while the database cannot be written writes the waiting calls to a spill file. On a
 * nearly full disk a write may take only part of what it is given without an error: the file
 * held the first few calls while the log said all were kept, and a replay's rewrite renamed a
 * cut file over the whole one. Needs root (a real small tmpfs), as test/faults/database.test.ts.
 */

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

function stored(file: string): number {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare('SELECT count(*) FROM calls').pluck().get() as number
  } finally {
    db.close()
  }
}

function row(i: number): CallRecord {
  return { ts: 1_700_000_000_000 + i, provider: 'openai', model: 'gpt-4o-mini', session: `s-${i}-${'x'.repeat(400)}`, cost_usd: 0.001 } as CallRecord
}

describe.skipIf(!canMount)('spill files on a disk that fills up (a small tmpfs; needs root)', () => {
  it('a stop: the log says exactly how many calls the file kept and how many were lost, and the next start stores those kept', async () => {
    const mount = mountTmpfs(4096)!
    try {
      const dataDir = join(mount, 'data')
      mkdirSync(dataDir)
      const lines: string[] = []
      const t = await startTestServer({}, upstream.url, dataDir, { log: createLogger('info', (l) => lines.push(l)) })
      const call = () => postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-fullspill-00000001' })
      expect((await call()).status).toBe(200)
      await eventually(() => stored(t.dbFile) === 1)
      // The database is full (as in test/faults/database.test.ts), then the disk but for one page.
      const db = t.server.db
      db.pragma('wal_checkpoint(TRUNCATE)')
      db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`)
      for (let i = 0; i < 40; i++) expect((await call()).status).toBe(200)
      await eventually(() => t.server.ledger.status.writable === false)
      const filler = join(mount, 'filler')
      fillDisk(filler, 4096)
      const waiting = t.server.ledger.status.pending
      const before = stored(t.dbFile)
      expect(waiting).toBeGreaterThan(20)
      await t.stop()
      // The stop's own file, and the journal kept while the database refused writes (if it got a page).
      const files = spillFiles(dataDir)
      expect(files.length).toBeGreaterThanOrEqual(1)
      const perFile = files.map((f) => new Set(readSpill(f).map((r) => r.call_key)))
      const kept = new Set(perFile.flatMap((k) => [...k])).size
      // (Not the ledger log's `calls are kept in memory`, which its 1 s check may have written first.)
      const said = lines.filter((l) => / call\(s\) kept in /.test(l)).map((l) => Number(/(\d+) call\(s\) kept in/.exec(l)![1]))
      expect(said.reduce((a, b) => a + b, 0)).toBe(kept)
      const lost = lines.find((l) => l.includes('could not be saved anywhere'))
      if (kept < waiting) expect(lost).toContain(`${waiting - kept} call(s) could not be saved anywhere: ENOSPC`)
      else expect(lost).toBeUndefined()
      rmSync(filler)
      const again = await startTestServer({}, upstream.url, dataDir)
      try {
        expect(stored(again.dbFile)).toBe(before + kept)
      } finally {
        await again.stop()
      }
    } finally {
      unmount(mount)
    }
  })

  it('a rewrite that does not fit leaves the whole file as it was', () => {
    const mount = mountTmpfs(256)!
    try {
      const rows = Array.from({ length: 100 }, (_, i) => row(i))
      const file = writeSpill(mount, rows, 1000)
      const text = readFileSync(file, 'utf8')
      fillDisk(join(mount, 'filler'), 4096)
      // Even the calls still to be written (all but the first) do not fit beside the file.
      expect(() => rewriteSpill(file, rows.slice(1))).toThrow(SpillCut)
      expect(readFileSync(file, 'utf8')).toBe(text)
      expect(spillFiles(mount)).toEqual([file])
    } finally {
      unmount(mount)
    }
  })
})
