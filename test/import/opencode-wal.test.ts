import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

const T = Date.parse('2026-11-20T10:00:00.000Z')
const msg = (ts: number) => ({
  role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5', time: { created: ts, completed: ts + 3000 },
  path: { cwd: '/home/dev/app', root: '/home/dev/app' }, cost: 0.01,
  tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 0, write: 0 } },
})

it('opencode.db in WAL mode (as a running opencode keeps it): a message committed after the last import is imported by the next one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-wal-'))
  const root = join(dir, 'opencode')
  mkdirSync(root)
  // opencode keeps its connection open all session, journal_mode = WAL: commits land in opencode.db-wal.
  const oc = new Database(join(root, 'opencode.db'))
  const db = openDatabase(join(dir, 'burnrate.db'))
  try {
    oc.pragma('journal_mode = WAL')
    oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL)')
    oc.pragma('wal_checkpoint(TRUNCATE)')
    const add = (id: string, ts: number) => oc.prepare('INSERT INTO message VALUES (?, ?, ?, ?, ?)').run(id, 'ses_1', ts, ts, JSON.stringify(msg(ts)))
    add('msg_1', T)
    const pricer = new Pricer()
    const a = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: T + 3_600_000 })
    expect(a.imported).toBe(1)
    const before = statSync(join(root, 'opencode.db'))
    add('msg_2', T + 60_000) // the next answer, opencode still running: no checkpoint yet
    const after = statSync(join(root, 'opencode.db'))
    // The database file itself did not change: only its -wal did.
    expect([after.size, after.mtimeMs]).toEqual([before.size, before.mtimeMs])
    const b = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: T + 3_600_000 })
    expect(b).toMatchObject({ files: 1, imported: 1 })
    expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(2)
    // Nothing new since: not read again.
    const c = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: T + 3_600_000 })
    expect(c).toMatchObject({ files: 0, unchanged: 1, imported: 0 })
  } finally {
    oc.close()
    db.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
