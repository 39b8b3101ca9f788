import { join } from 'node:path'
import { expect, it } from 'vitest'
import { spendCounter, spendMover } from '../../src/main/budgets/state/pg/call-spend'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { storeIngestedPg } from '../../src/main/team/store'
import { readIngestCall } from '../../src/main/team/validate'
import { writeCodexRollout } from '../support/codex-rollout'
import { usePostgres } from '../support/pg-harness'

/**
 * A team server on PostgreSQL whose instance imports its own machine's agent logs: a call a
 * member's Burnrate sent it (ingested, `origin_id` set) was made on that member's machine and is
 * never a logged call's twin, by its counts or its answer id. Builds before this one matched the
 * log to it, and the logged call was never stored (as test/team/import-members-calls.test.ts on SQLite).
 */
const h = usePostgres({ upstream: false })
const countSpend = spendCounter({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const moveSpend = spendMover({ timezone: 'UTC', budgets: { week_start: 'monday' } })
const T = Date.parse('2026-11-20T10:00:00.000Z')

it("stores a logged call whose counts a member's ingested call shares", async () => {
  const store = h.store(h.database())
  await migratePostgres(store)
  const sent = {
    id: 7, t: new Date(T).toISOString(), provider: 'openai', model: 'gpt-5-codex', endpoint: 'responses', api_key_hash: '', key_hint: '',
    tenant: '', agent: 'codex', session: 's', status: 200, streamed: true, input_tokens: 5000, output_tokens: 400, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.01, priced: true, estimated: false, latency_ms: 10, source: 'proxy', billing: 'api',
  }
  expect((await storeIngestedPg(store, [readIngestCall(sent, 'alice')])).stored).toHaveLength(1)
  const dir = h.tempDir('burnrate-pg-import-members-')
  const root = join(dir, 'codex')
  writeCodexRollout(root, T + 2000)
  const local = openDatabase(join(dir, 'local.db'))
  try {
    const s = await importLogs(local, { agent: 'codex', paths: [root], pricer: new Pricer(), now: T + 3_600_000, store, countSpend, moveSpend })
    expect(s).toMatchObject({ matched: 0, imported: 1 })
  } finally {
    local.close()
  }
  const rows = await store.all<any>('SELECT member, source, origin_id FROM calls ORDER BY id')
  expect(rows.map((r) => [r.member, r.source, r.origin_id === null ? null : Number(r.origin_id)])).toEqual([
    ['alice', 'proxy', 7],
    ['', 'import', null],
  ])
})
