import { join } from 'node:path'
import { mkdirSync } from 'node:fs'
import Database from 'better-sqlite3'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { usePostgres } from '../support/pg-harness'

/**
 * Two Burnrate instances on one PostgreSQL importing the same agent log (a shared home, or a
 * `burnrate import` beside a server, each with its own local file): whichever stored a logged call
 * first, the other's import key names that call, so a later read of the grown log moves it.
 */
const h = usePostgres({ upstream: false })
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const T = Date.parse('2026-11-20T10:00:00.000Z')
const message = (output: number) => JSON.stringify({
  role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', parentID: 'msg_user1', sessionID: 'ses_1',
  path: { cwd: '/home/dev/site', root: '/home/dev/site' }, time: { created: T },
  tokens: { input: 12, output, reasoning: 0, cache: { read: 15000, write: 1800 } },
})

it("an opencode message another instance stored first takes its grown usage when this one reads it again", async () => {
  const store = h.store(h.database())
  await migratePostgres(store)
  const dir = h.tempDir('burnrate-pg-import-two-')
  const root = join(dir, 'opencode')
  mkdirSync(root)
  // opencode's own database, as opencode writes it: the message row is updated as its steps finish.
  const oc = new Database(join(root, 'opencode.db'))
  oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
  oc.prepare('INSERT INTO message VALUES (?, ?, ?)').run('msg_a0001', 'ses_1', message(40))
  const pricer = new Pricer()
  const opts = { agent: 'opencode' as const, paths: [root], pricer, now: T + 3_600_000, store, countSpend, moveSpend }
  const a = openDatabase(join(dir, 'a.db'))
  const b = openDatabase(join(dir, 'b.db'))
  expect(await importLogs(a, opts)).toMatchObject({ imported: 1 })
  expect(await importLogs(b, opts)).toMatchObject({ imported: 0, duplicates: 1 })
  const stored = (await store.get<{ id: number; cost_usd: number }>('SELECT id, cost_usd FROM calls'))!
  expect(b.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck().get('opencode:msg_a0001')).toBe(stored.id)
  a.close()

  // The answer goes on; only B is there to read it.
  oc.prepare('UPDATE message SET data = ? WHERE id = ?').run(message(2400), 'msg_a0001')
  const grown = await importLogs(b, opts)
  expect(grown).toMatchObject({ imported: 0, updated: 1 })
  const call = (await store.get<any>('SELECT output_tokens, cost_usd FROM calls'))!
  expect(Number(call.output_tokens)).toBe(2400)
  expect(call.cost_usd).toBeGreaterThan(stored.cost_usd)
  expect(grown.cost_usd).toBe(call.cost_usd - stored.cost_usd)
  const day = (await store.get<any>('SELECT sum(requests) AS n, sum(output_tokens) AS o, sum(cost_usd) AS c FROM dash_day'))!
  expect([Number(day.n), Number(day.o)]).toEqual([1, 2400])
  expect(Number(day.c)).toBeCloseTo(call.cost_usd, 12)

  // A local file an older Burnrate left with the key at call 0 finds the call again, and moves it once.
  const c = openDatabase(join(dir, 'c.db'))
  c.prepare('INSERT INTO import_keys (key, call_id) VALUES (?, 0)').run('opencode:msg_a0001')
  oc.prepare('UPDATE message SET data = ? WHERE id = ?').run(message(3000), 'msg_a0001')
  expect(await importLogs(c, opts)).toMatchObject({ imported: 0, updated: 1 })
  expect(c.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck().get('opencode:msg_a0001')).toBe(stored.id)
  expect(await importLogs(b, opts)).toMatchObject({ imported: 0, updated: 0, duplicates: 1, cost_usd: 0 })
  const last = (await store.get<any>('SELECT output_tokens, cost_usd FROM calls'))!
  expect(Number(last.output_tokens)).toBe(3000)
  const day2 = (await store.get<any>('SELECT sum(requests) AS n, sum(output_tokens) AS o, sum(cost_usd) AS c FROM dash_day'))!
  expect([Number(day2.n), Number(day2.o)]).toEqual([1, 3000])
  expect(Number(day2.c)).toBeCloseTo(last.cost_usd, 12)
  b.close()
  c.close()
  oc.close()
})
