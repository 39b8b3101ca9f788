import { appendFileSync, cpSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { importCallKey } from '../../src/main/import/write-postgres'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { usePostgres } from '../support/pg-harness'

/**
 * A Codex fork's own calls are keyed by its own thread (test/import/codex-fork-collision.test.ts),
 * on a PostgreSQL ledger too: the parent going on to a running total the fork reached is another
 * call (its call key another), and a fork's own call an earlier build keyed as its parent's, in
 * this machine's file, is not stored again when the fork grows.
 */
const h = usePostgres()
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const PARENT = '019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12'
const FORK = '019a4b9f-0a1b-7c2d-9e3f-4a5b6c7d8e90'
const DAY = 'sessions/2026/11/02'
const PARENT_FILE = `rollout-2026-11-02T09-14-03-${PARENT}.jsonl`
const FORK_FILE = `rollout-2026-11-02T10-02-47-${FORK}.jsonl`

const tokenCount = (ts: string, total: [number, number, number], last: [number, number, number]) =>
  JSON.stringify({
    timestamp: ts,
    type: 'event_msg',
    payload: {
      type: 'token_count',
      info: {
        total_token_usage: { input_tokens: total[0], cached_input_tokens: total[1], output_tokens: total[2], reasoning_output_tokens: 0, total_tokens: total[0] + total[2] },
        last_token_usage: { input_tokens: last[0], cached_input_tokens: last[1], output_tokens: last[2], reasoning_output_tokens: 0, total_tokens: last[0] + last[2] },
      },
      rate_limits: null,
    },
  }) + '\n'

async function setUp(prefix: string) {
  const store = h.store(h.database())
  await migratePostgres(store)
  const dir = h.tempDir(prefix)
  cpSync(resolve(__dirname, '../fixtures/codex-fork/sessions'), join(dir, 'sessions'), { recursive: true })
  const db = openDatabase(join(dir, 'burnrate.db'))
  h.onTeardown(() => db.close())
  const opts = { agent: 'codex' as const, paths: [join(dir, 'sessions')], pricer: new Pricer(), now: Date.parse('2026-11-03T00:00:00Z'), store, countSpend, moveSpend }
  const calls = async () =>
    (await store.all<{ session: string; input_tokens: number }>('SELECT session, input_tokens FROM calls ORDER BY ts')).map((r) => [r.session, Number(r.input_tokens)])
  const requests = async () => Number((await store.get<{ n: number }>('SELECT sum(requests) AS n FROM dash_day'))!.n)
  return { dir, db, opts, calls, requests, store }
}

it("PostgreSQL: a Codex parent going on to its fork's running total is another call, stored", async () => {
  const { dir, db, opts, calls, requests } = await setUp('burnrate-pg-codex-fork-collide-')
  // The parent goes on to the fork's own call's running total (29855), after the fork was made.
  appendFileSync(join(dir, DAY, PARENT_FILE), tokenCount('2026-11-02T10:05:11.000Z', [28950, 18176, 905], [10490, 9472, 315]))
  expect(await importLogs(db, opts)).toMatchObject({ imported: 4, duplicates: 2 })
  expect(await calls()).toEqual([[PARENT, 8810], [PARENT, 9650], [FORK, 10490], [PARENT, 10490]])
  expect(await requests()).toBe(4)
})

it("PostgreSQL: a Codex fork's own call an earlier build keyed as its parent's is not stored again when the fork grows", async () => {
  const { dir, db, opts, calls, requests, store } = await setUp('burnrate-pg-codex-fork-old-key-')
  expect(await importLogs(db, opts)).toMatchObject({ imported: 3 })
  // As an earlier build kept it, in this machine's file: the fork's own call under the root thread's key.
  expect(db.prepare('UPDATE import_keys SET key = ? WHERE key = ?').run(`codex:${PARENT}:29855`, `codex:${FORK}:29855`).changes).toBe(1)
  // ...and its call key in PostgreSQL, made from it.
  expect(await store.run('UPDATE calls SET call_key = @old WHERE call_key = @now', { old: importCallKey(`codex:${PARENT}:29855`), now: importCallKey(`codex:${FORK}:29855`) })).toBe(1)
  appendFileSync(join(dir, DAY, FORK_FILE), tokenCount('2026-11-02T10:04:00.000Z', [40000, 27000, 1200], [11050, 8824, 295]))
  expect(await importLogs(db, opts)).toMatchObject({ imported: 1 })
  expect(await calls()).toEqual([[PARENT, 8810], [PARENT, 9650], [FORK, 10490], [FORK, 11050]])
  expect(await requests()).toBe(4)
})

it("PostgreSQL: a second instance (its own local file) does not store again a Codex fork's own call an earlier build stored under its parent's key", async () => {
  const { dir, db, opts, calls, requests, store } = await setUp('burnrate-pg-codex-fork-old-key-other-')
  expect(await importLogs(db, opts)).toMatchObject({ imported: 3 })
  // As an earlier build stored it: the fork's own call under the root thread's call key (and kept its key so in its own file).
  expect(await store.run('UPDATE calls SET call_key = @old WHERE call_key = @now', { old: importCallKey(`codex:${PARENT}:29855`), now: importCallKey(`codex:${FORK}:29855`) })).toBe(1)
  db.prepare('UPDATE import_keys SET key = ? WHERE key = ?').run(`codex:${PARENT}:29855`, `codex:${FORK}:29855`)
  // Another instance on the same database reads the same logs (a `burnrate import` beside the server, its own local file).
  const other = openDatabase(join(dir, 'other.db'))
  h.onTeardown(() => other.close())
  expect(await importLogs(other, opts)).toMatchObject({ imported: 0 })
  expect(await calls()).toEqual([[PARENT, 8810], [PARENT, 9650], [FORK, 10490]])
  expect(await requests()).toBe(3)
  // Its key names that call, so the fork growing is one call more, once.
  appendFileSync(join(dir, DAY, FORK_FILE), tokenCount('2026-11-02T10:04:00.000Z', [40000, 27000, 1200], [11050, 8824, 295]))
  expect(await importLogs(other, opts)).toMatchObject({ imported: 1 })
  expect(await importLogs(db, opts)).toMatchObject({ imported: 0 })
  expect(await requests()).toBe(4)
})

it("PostgreSQL: a Codex fork's own call an earlier build matched to its proxied call (claimed under its parent's key) is still that call for a second instance", async () => {
  const { dir, db, opts, calls, requests, store } = await setUp('burnrate-pg-codex-fork-old-claim-')
  expect(await importLogs(db, opts)).toMatchObject({ imported: 3 })
  // As an earlier build left it: the fork's own call went through the proxy (the fork's session, stamped as it was sent),
  // and the import matched it, claiming it under the root thread's key.
  const proxied = (await store.get<{ id: number }>("UPDATE calls SET source = 'proxy', call_key = NULL, ts = ts - 2000 WHERE session = @fork RETURNING id", { fork: FORK }))!
  await store.run('INSERT INTO import_claims (call_id, key) VALUES (@id, @key)', { id: proxied.id, key: importCallKey(`codex:${PARENT}:29855`) })
  const other = openDatabase(join(dir, 'other.db'))
  h.onTeardown(() => other.close())
  expect(await importLogs(other, opts)).toMatchObject({ imported: 0, matched: 1 })
  expect(await calls()).toEqual([[PARENT, 8810], [PARENT, 9650], [FORK, 10490]])
  expect(await requests()).toBe(3)
})
