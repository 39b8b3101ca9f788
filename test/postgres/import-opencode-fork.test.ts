import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { usePostgres } from '../support/pg-harness'

/**
 * opencode's session fork copies every message under a new id, with the original's model, time
 * and tokens (test/import/opencode-fork.test.ts): on a PostgreSQL ledger too, the copy is the
 * original's call, whether both are read in one import or the copy after.
 */
const h = usePostgres()
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const T = Date.parse('2026-11-20T10:00:00.000Z')
const info = {
  role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', parentID: 'msg_user1',
  path: { cwd: '/home/dev/site', root: '/home/dev/site' }, time: { created: T, completed: T + 4000 },
  tokens: { input: 12, output: 240, reasoning: 0, cache: { read: 15000, write: 1800 } },
}

it('a forked opencode session\'s copies are not stored again in PostgreSQL', async () => {
  const store = h.store(h.database())
  await migratePostgres(store)
  const dir = h.tempDir('burnrate-pg-opencode-fork-')
  const root = join(dir, 'opencode')
  mkdirSync(root)
  const oc = new Database(join(root, 'opencode.db'))
  oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
  const add = (id: string, session: string, over: object = {}) =>
    oc.prepare('INSERT INTO message VALUES (?, ?, ?)').run(id, session, JSON.stringify({ ...info, ...over }))
  add('msg_a0001', 'ses_orig')
  add('msg_a0002', 'ses_orig', { time: { created: T + 60_000 } })
  add('msg_f0001', 'ses_fork')
  const db = openDatabase(join(dir, 'burnrate.db'))
  const opts = { agent: 'opencode' as const, paths: [root], pricer: new Pricer(), now: T + 3_600_000, store, countSpend, moveSpend }
  expect(await importLogs(db, opts)).toMatchObject({ imported: 2, duplicates: 1 })
  add('msg_f0002', 'ses_fork', { time: { created: T + 60_000 } })
  oc.close()
  expect(await importLogs(db, opts)).toMatchObject({ imported: 0, duplicates: 4 })
  db.close()
  expect((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n).toBe(2)
  expect((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n).toBe(2)
})
