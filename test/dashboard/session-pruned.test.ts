import { describe, expect, it } from 'vitest'
import type { IngestCall, SessionRow } from '../../src/shared/api'
import { getJson, keyHash, makeCall } from './seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { PG_MIGRATIONS_FROM_15 } from '../../src/main/storage/postgres-migrations/versions-15-on'
import { type TestServer, startTestServer } from '../support/server'

// A listed session's `requests` and `cost_usd` come from its rollup row, which retention keeps,
// while its `unpriced_requests` are counted from its calls, which retention prunes: on a team
// server (ingested calls are pruned by age alone) a session that began before the retention
// window read, say, 7 requests and 1 unpriced though 3 of its pruned calls had no price, with
// nothing to tell it from a session whose other calls were all priced. The row now says how many
// of its requests were pruned (`pruned_requests`), whose price is no longer known.

const DAY = 86_400_000
const ALICE = 'team-token-alice-sessprune-5b1e9c'
const TEAM = { team: { members: [{ name: 'alice', token: ALICE }] }, timezone: 'UTC' }
const now = Date.now()

function call(id: number, ts: number, priced: boolean): IngestCall {
  return {
    id, t: new Date(ts).toISOString(), provider: 'openai', model: priced ? 'gpt-4o-mini' : 'private-model', api_key_hash: keyHash('sk-proj-sess-pruned-0001'),
    key_hint: 'sk-…0001', tenant: '', agent: 'codex', session: 's-long', status: 200, streamed: false, input_tokens: 100, output_tokens: 10,
    cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: priced ? 0.01 : 0, priced, estimated: false, latency_ms: 100,
    response_id: `resp_${id}`, source: 'proxy', billing: 'api', project: '', member: '',
  }
}
// Five calls 40 days old (three of no known price), two from the last hour (one of none).
const calls = [
  ...[1, 2, 3, 4, 5].map((id) => call(id, now - 40 * DAY + id * 60_000, id > 3 ? true : false)),
  call(6, now - 3_600_000, true),
  call(7, now - 1_800_000, false),
]

const row = async (t: TestServer, session: string): Promise<SessionRow> => {
  const body = (await getJson(`${t.url}/api/dashboard/sessions`)).body as { sessions: SessionRow[] }
  return body.sessions.find((s) => s.session === session)!
}

async function scenario(team: TestServer): Promise<void> {
  expect((await postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })).json()).toMatchObject({ accepted: 7 })
  // Every call kept: the whole session counted.
  expect(await row(team, 's-long')).toMatchObject({ requests: 7, unpriced_requests: 4, pruned_requests: 0 })
  // Retention (32 days) prunes the five old calls; the rollup keeps their requests and cost.
  expect(await team.server.ledger.prune(now - 32 * DAY, 1000)).toBe(5)
  const r = await row(team, 's-long')
  expect(r).toMatchObject({ requests: 7, unpriced_requests: 1, pruned_requests: 5 })
  expect(r.cost_usd).toBeCloseTo(0.03, 12)
  // Every request is the kept ones' or a pruned one's: none unaccounted for, none twice.
  expect(r.pruned_requests + 2).toBe(r.requests)
}

describe('a listed session some of whose calls retention pruned', () => {
  it('SQLite team server: says how many of its requests were pruned, beside the unpriced ones kept', async () => {
    const team = await startTestServer(TEAM)
    try {
      await scenario(team)
    } finally {
      await team.cleanup()
    }
  })

  it("SQLite: a session whose old calls were kept (in use) has none pruned; one resumed after they were pruned says so", async () => {
    const t = await startTestServer({ timezone: 'UTC' })
    try {
      const record = (over: Parameters<typeof makeCall>[0]) => t.server.ledger.record(makeCall({ agent: 'codex', ...over }))
      // In use: a call 40 days ago and one now. Idle: two calls 40 days ago, none since.
      record({ ts: now - 40 * DAY, session: 'live', priced: false, cost_usd: 0 })
      record({ ts: now - 40 * DAY + 1000, session: 'resumed', priced: false, cost_usd: 0 })
      record({ ts: now - 40 * DAY + 2000, session: 'resumed' })
      record({ ts: now - 60_000, session: 'live' })
      await t.server.ledger.flush()
      await eventually(() => (t.server.db.prepare('SELECT count(*) FROM calls').pluck().get() as number) === 4)
      expect(await t.server.ledger.prune(now - 32 * DAY, 1000)).toBe(2)
      expect(await row(t, 'live')).toMatchObject({ requests: 2, unpriced_requests: 1, pruned_requests: 0 })
      // The idle session is resumed: its two pruned calls are still its requests, one of them unpriced.
      record({ ts: now - 30_000, session: 'resumed' })
      await t.server.ledger.flush()
      await eventually(async () => (await row(t, 'resumed'))?.requests === 3)
      expect(await row(t, 'resumed')).toMatchObject({ requests: 3, unpriced_requests: 0, pruned_requests: 2 })
    } finally {
      await t.cleanup()
    }
  })
})

describe('a listed session some of whose calls retention pruned, on PostgreSQL', () => {
  const h = usePostgres({ upstream: false })
  it('team server: says how many of its requests were pruned', async () => {
    await scenario(await h.server({ url: h.database(), config: TEAM }))
  })

  it('a database an earlier build pruned gets its sessions\' pruned requests once, at the upgrade (migration 29)', async () => {
    const url = h.database()
    const team = await h.server({ url, config: TEAM })
    await scenario(team)
    await team.cleanup()
    // As an earlier build left it: no count on the session rows (schema version 28).
    const store = h.store(url)
    await store.run('ALTER TABLE dash_session DROP COLUMN pruned_requests')
    await store.run('DELETE FROM burnrate_schema WHERE version >= 29')
    await migratePostgres(store)
    expect(await store.all('SELECT session, requests, pruned_requests FROM dash_session')).toEqual([{ session: 's-long', requests: 7, pruned_requests: 5 }])
  })

  it("the upgrade reads a session name's kept calls once, not once per agent sharing it (migration 29)", async () => {
    const url = h.database()
    const team = await h.server({ url, config: TEAM })
    // Three agents share the name `main`: two calls 40 days old and two from the last hour each.
    const shared = [0, 1, 2].flatMap((a) =>
      [now - 40 * DAY, now - 40 * DAY + 60_000, now - 3_600_000, now - 1_800_000].map((ts, i) => ({
        ...call(100 + a * 10 + i, ts, true), agent: `agent-${a}`, session: 'main',
      })),
    )
    expect((await postJson(`${team.url}/api/ingest`, { calls: shared }, { authorization: `Bearer ${ALICE}` })).json()).toMatchObject({ accepted: 12 })
    expect(await team.server.ledger.prune(now - 32 * DAY, 1000)).toBe(6)
    await team.cleanup()
    const store = h.store(url)
    await store.run('ALTER TABLE dash_session DROP COLUMN pruned_requests')
    await store.run('DELETE FROM burnrate_schema WHERE version >= 29')
    await migratePostgres(store)
    expect(await store.all('SELECT agent, requests, pruned_requests FROM dash_session ORDER BY agent')).toEqual(
      [0, 1, 2].map((a) => ({ agent: `agent-${a}`, requests: 4, pruned_requests: 2 })),
    )
    // The calls the backfill reads (it sets the counts, so running it again changes nothing): each
    // of the 6 kept calls once, where it read all of the name's calls for each of its rows before (18).
    const backfill = PG_MIGRATIONS_FROM_15.find((m) => m.version === 29)!.sql.at(-1)!
    const [plan] = (await store.all<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${backfill}`))[0]['QUERY PLAN'] as { Plan: PlanNode }[]
    expect(callsRead(plan.Plan)).toBeLessThanOrEqual(6)
    expect(await store.all('SELECT agent, requests, pruned_requests FROM dash_session ORDER BY agent')).toEqual(
      [0, 1, 2].map((a) => ({ agent: `agent-${a}`, requests: 4, pruned_requests: 2 })),
    )
  })
})

interface PlanNode {
  'Relation Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Rows Removed by Index Recheck'?: number
  Plans?: PlanNode[]
}

/** The rows of `calls` a plan's scans read (returned or filtered out), over all their loops. */
function callsRead(n: PlanNode): number {
  const own = n['Relation Name'] === 'calls'
    ? ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) * (n['Actual Loops'] ?? 1)
    : 0
  return own + (n.Plans ?? []).reduce((m, c) => m + callsRead(c), 0)
}
