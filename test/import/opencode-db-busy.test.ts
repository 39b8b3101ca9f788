import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * An opencode.db that another process holds locked when it is read (SQLITE_BUSY: a writer's
 * exclusive lock, a checkpoint) was counted as one bad line and recorded as read: its size and
 * mtime unchanged once the lock went, every later import skipped it as unchanged, and its
 * messages waited for the database to change again. It is now named as unreadable, and read at
 * the next import.
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-busy-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const T = Date.parse('2026-11-20T10:00:00.000Z')
const message = (at: number) => ({
  role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', path: { cwd: '/home/dev/x' },
  time: { created: at }, tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.0081,
})

it('an opencode.db locked by another process while read is named, and its messages imported at the next import', { timeout: 60_000 }, async () => {
  const root = join(dir, 'opencode')
  mkdirSync(root)
  const file = join(root, 'opencode.db')
  const oc = new BetterSqlite(file)
  oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
  oc.exec('CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT)')
  const add = oc.prepare('INSERT INTO message VALUES (?, ?, ?)')
  add.run('msg_1', 'ses_1', JSON.stringify(message(T)))
  add.run('msg_2', 'ses_1', JSON.stringify(message(T + 60_000)))
  // Another process's write under way: an exclusive lock (the rollback journal's), nothing changed in the file.
  oc.exec('BEGIN EXCLUSIVE')
  const db = openDatabase(join(dir, 'burnrate.db'))
  try {
    const busy = await importLogs(db, { agent: 'opencode', paths: [root], pricer: new Pricer() })
    expect(busy).toMatchObject({ imported: 0, skipped_lines: 0, unreadable: [file] })

    oc.exec('ROLLBACK')
    const after = await importLogs(db, { agent: 'opencode', paths: [root], pricer: new Pricer() })
    expect(after).toMatchObject({ files: 1, unchanged: 0, imported: 2, skipped_lines: 0, unreadable: [] })
    expect(db.prepare('SELECT COUNT(*) AS n FROM calls').get()).toEqual({ n: 2 })
  } finally {
    db.close()
    oc.close()
  }
})
