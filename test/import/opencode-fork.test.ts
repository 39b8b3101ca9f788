import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type BetterSqlite from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * opencode's session fork (`Session.fork`: the TUI's and the app's "fork", the server's
 * `POST /session/:id/fork`) copies every message of the session into a new one, each under a new
 * id (`...msg.info, sessionID: session.id, id: Identifier.ascending("message")`): the copy keeps
 * the original's provider, model, `time.created` and `tokens`. A copy is no new model call: the
 * fork sent nothing. Keyed by message id alone, each fork imported every answer again.
 */
const T = Date.parse('2026-11-20T10:00:00.000Z')
const NOW = T + 3_600_000
const info = {
  role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', mode: 'build', parentID: 'msg_user1',
  path: { cwd: '/home/dev/site', root: '/home/dev/site' }, cost: 0.09, time: { created: T, completed: T + 4000 },
  tokens: { input: 12, output: 240, reasoning: 0, cache: { read: 15000, write: 1800 } },
}
const pricer = new Pricer()
let dir: string
let db: BetterSqlite.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-fork-'))
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})
const calls = () => db.prepare("SELECT session, cost_usd FROM calls WHERE agent = 'opencode'").all() as { session: string; cost_usd: number }[]

function opencodeDb(root: string): BetterSqlite.Database {
  mkdirSync(root, { recursive: true })
  const oc = new Database(join(root, 'opencode.db'))
  oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER, time_updated INTEGER, data TEXT NOT NULL)')
  return oc
}
const add = (oc: BetterSqlite.Database, id: string, session: string) =>
  oc.prepare('INSERT INTO message VALUES (?, ?, ?, ?, ?)').run(id, session, T, T, JSON.stringify(info))

describe('an opencode session forked', () => {
  it('opencode.db: the fork\'s copy of an answer is the original\'s call, counted once', async () => {
    const root = join(dir, 'opencode')
    const oc = opencodeDb(root)
    add(oc, 'msg_a0001', 'ses_orig')
    add(oc, 'msg_f0001', 'ses_fork')
    oc.close()
    const s = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: NOW })
    expect(calls()).toHaveLength(1)
    expect(s).toMatchObject({ imported: 1, duplicates: 1 })
  })

  it('opencode.db: forked after the original was imported, the next import adds nothing', async () => {
    const root = join(dir, 'opencode')
    const oc = opencodeDb(root)
    add(oc, 'msg_a0001', 'ses_orig')
    expect(await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: NOW })).toMatchObject({ imported: 1 })
    const before = calls()
    add(oc, 'msg_f0001', 'ses_fork')
    oc.close()
    const s = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: NOW })
    expect(s).toMatchObject({ files: 1, imported: 0 })
    expect(calls()).toEqual(before)
  })

  it('storage/message JSON files (older opencode): the copy in the fork\'s folder is counted once', async () => {
    const root = join(dir, 'opencode')
    const write = (session: string, id: string) => {
      mkdirSync(join(root, 'storage/message', session), { recursive: true })
      writeFileSync(join(root, 'storage/message', session, `${id}.json`), JSON.stringify({ id, sessionID: session, ...info }))
    }
    write('ses_orig', 'msg_a0001')
    write('ses_fork', 'msg_f0001')
    const s = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: NOW })
    expect(calls()).toHaveLength(1)
    expect(s).toMatchObject({ files: 2, imported: 1, duplicates: 1 })
  })

  it('two answers of the same model at other times, or with other counts, stay two calls', async () => {
    const root = join(dir, 'opencode')
    const oc = opencodeDb(root)
    add(oc, 'msg_a0001', 'ses_orig')
    oc.prepare('INSERT INTO message VALUES (?, ?, ?, ?, ?)').run('msg_a0002', 'ses_orig', T, T, JSON.stringify({ ...info, time: { created: T + 1 } }))
    oc.prepare('INSERT INTO message VALUES (?, ?, ?, ?, ?)').run('msg_a0003', 'ses_orig', T, T, JSON.stringify({ ...info, tokens: { ...info.tokens, output: 241 } }))
    oc.close()
    const s = await importLogs(db, { agent: 'opencode', paths: [root], pricer, now: NOW })
    expect(s).toMatchObject({ imported: 3, duplicates: 0 })
  })
})
