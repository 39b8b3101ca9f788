import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * Two team instances on one PostgreSQL: one's retention step prunes a member's old calls while
 * the other takes the same calls sent again (the member's answer was lost, say). The resend must
 * see either the calls still held (duplicates) or the prune it waited on (pruned since: duplicates
 * too), never neither. Before, it read the time pruned before ahead of the prune's commit, its
 * insert waited on the rows being deleted and, once they were, stored them again: their cost was
 * counted twice in the team's totals (the rollups keep what retention pruned).
 */
const DAY = 86_400_000
const ALICE = 'team-token-alice-prune-race-5e1b'
const MEMBERS = { team: { members: [{ name: 'alice', token: ALICE }] }, timezone: 'UTC' }
const now = Date.now()

function call(id: number, ts: number): IngestCall {
  return {
    id, t: new Date(ts).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-prune-race-0001'), key_hint: 'sk-…0001',
    tenant: '', agent: 'codex', session: 's-1', status: 200, streamed: false, input_tokens: 100, output_tokens: 10, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.01, priced: true, estimated: false, latency_ms: 100, response_id: `resp_${id}`,
    source: 'proxy', billing: 'api', project: '', member: '',
  }
}
// Five calls 40 days old, two from the last hour.
const calls = [1, 2, 3, 4, 5].map((id) => call(id, now - 40 * DAY + id * 60_000)).concat([6, 7].map((id) => call(id, now - 3_600_000 + id * 60_000)))
const ingest = (t: TestServer, body: IngestCall[]) => postJson(`${t.url}/api/ingest`, { calls: body }, { authorization: `Bearer ${ALICE}` })

describe('a team server on PostgreSQL pruning calls a member sends again at that moment', () => {
  const h = usePostgres({ upstream: false })
  it('counts them once', async () => {
    const url = h.database()
    const store = h.store(url)
    const pruner = await h.server({ url, config: MEMBERS })
    const taker = await h.server({ url, config: MEMBERS })
    const requests = async () => Number((await store.get<{ n: number }>('SELECT COALESCE(sum(requests), 0) AS n FROM dash_day'))!.n)
    const waiting = async () =>
      Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))!.n)
    expect((await ingest(taker, calls)).json()).toMatchObject({ accepted: 7 })
    expect(await requests()).toBe(7)

    // Held at a chosen point: a session holds the retention row, so the prune step (on one
    // instance) and the resend (on the other) both get under way and wait.
    const hold = await store.pool.connect()
    try {
      await hold.query('BEGIN')
      await hold.query('SELECT * FROM retention_state WHERE id = 1 FOR UPDATE')
      const pruned = pruner.server.ledger.prune(now - 32 * DAY, 1000)
      await eventually(async () => (await waiting()) === 1 || undefined)
      const resent = ingest(taker, calls)
      await eventually(async () => (await waiting()) === 2 || undefined)
      await hold.query('ROLLBACK')
      expect(await pruned).toBe(5)
      expect((await resent).json()).toMatchObject({ accepted: 0, duplicates: 7, rejected: [] })
    } finally {
      hold.release()
    }
    expect(await requests()).toBe(7)
    expect(Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE member = 'alice'"))!.n)).toBe(2)
  })
})
