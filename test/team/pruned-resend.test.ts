import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { getJson, keyHash } from '../dashboard/seed'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A team server with retention prunes old ingested calls; their cost stays in its rollups. A
 * member that sends them again as first recorded (a new spelling of team.url starts a new cursor,
 * from the member's first call) must not have them counted twice. A member's first backlog of
 * old calls is still counted. Retention keeps each member's last call, so even one whose every
 * other call was pruned is known.
 */
const DAY = 86_400_000
const ALICE = 'team-token-alice-pruned-7f3c9a1e'
const BOB = 'team-token-bob-pruned-2d8e4f6a0c'
const MEMBERS = { team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] }, timezone: 'UTC' }
const now = Date.now()

function call(id: number, ts: number): IngestCall {
  return {
    id, t: new Date(ts).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-pruned-resend-0001'), key_hint: 'sk-…0001',
    tenant: '', agent: 'codex', session: 's-1', status: 200, streamed: false, input_tokens: 100, output_tokens: 10, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.01, priced: true, estimated: false, latency_ms: 100, response_id: `resp_${id}`,
    source: 'proxy', billing: 'api', project: '', member: '',
  }
}
// Five calls 40 days old, two from the last hour.
const calls = [1, 2, 3, 4, 5].map((id) => call(id, now - 40 * DAY + id * 60_000)).concat([6, 7].map((id) => call(id, now - 3_600_000 + id * 60_000)))

const ingest = (t: TestServer, body: IngestCall[], token: string) => postJson(`${t.url}/api/ingest`, { calls: body }, { authorization: `Bearer ${token}` })

/** `requests`: what the team's rollups count (SQLite: the report; PostgreSQL: its daily totals). */
async function scenario(team: TestServer, requests: () => Promise<number>): Promise<void> {
  expect((await ingest(team, calls, ALICE)).json()).toMatchObject({ accepted: 7 })
  expect(await requests()).toBe(7)
  // Retention (32 days) prunes the five old calls; the report keeps them.
  expect(await team.server.ledger.prune(now - 32 * DAY, 1000)).toBe(5)
  expect(await requests()).toBe(7)
  // Sent again, as first recorded: every one is a duplicate, none counted twice.
  expect((await ingest(team, calls, ALICE)).json()).toMatchObject({ accepted: 0, duplicates: 7, rejected: [] })
  expect(await requests()).toBe(7)
  // Another member's first calls, as old: stored and counted.
  expect((await ingest(team, calls.slice(0, 3), BOB)).json()).toMatchObject({ accepted: 3 })
  expect(await requests()).toBe(10)
  // Alice goes on; retention prunes Bob's old calls, all but his last (what tells his calls sent
  // again from duplicates), and he sends them again: none counted twice.
  expect((await ingest(team, [call(8, now - 60_000)], ALICE)).json()).toMatchObject({ accepted: 1 })
  expect(await team.server.ledger.prune(now - 32 * DAY, 1000)).toBe(2)
  expect((await ingest(team, calls.slice(0, 3), BOB)).json()).toMatchObject({ accepted: 0, duplicates: 3, rejected: [] })
  expect(await requests()).toBe(11)
}

describe('a team server sent calls again after its retention pruned them', () => {
  it('SQLite: counts them once', async () => {
    const team = await startTestServer(MEMBERS)
    try {
      await scenario(team, async () => (await getJson(`${team.url}/api/dashboard/report?kind=monthly`)).body.totals.requests)
    } finally {
      await team.cleanup()
    }
  })
})

describe('a team server on PostgreSQL sent calls again after its retention pruned them', () => {
  const h = usePostgres({ upstream: false })
  it('counts them once', async () => {
    const url = h.database()
    const store = h.store(url)
    await scenario(await h.server({ url, config: MEMBERS }), async () => Number((await store.get<{ n: number }>('SELECT COALESCE(sum(requests), 0) AS n FROM dash_day'))!.n))
  })
})
