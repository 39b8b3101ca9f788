import { expect, it } from 'vitest'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A team server on PostgreSQL: an older revision of a member's call arriving late (a resend after
 * a lost answer) after the call was re-priced, or superseded by the member's proxied call, is a
 * duplicate: nothing counted again, what is held stays (README: Team; ../team/revisions.test.ts
 * and ../team/superseded-cost.test.ts on SQLite; team-reclassed.test.ts after a re-class).
 */
const ALICE = 'team-token-alice-pg-late-revisions-1'
const h = usePostgres({ upstream: false })

it('an older revision arriving late after a re-priced or superseded one is a duplicate on a team server on PostgreSQL', async () => {
  const url = h.database()
  const store = h.store(url)
  await migratePostgres(store)
  const team = await h.server({ url, config: { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } } })
  const ingest = async (calls: unknown[]) => (await postJson(`${team.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })).json()
  const base = Date.now() - 60_000
  const call = (id: number, cost: number, over: Record<string, unknown> = {}) => ({
    id, t: new Date(base + id).toISOString(), provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_hash: '', key_hint: '', tenant: '',
    agent: 'claude-code', session: 's', status: 200, streamed: false, input_tokens: 100, output_tokens: 10, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: cost, priced: true, estimated: false, latency_ms: 0, response_id: `msg_late_${id}`,
    source: 'proxy', billing: 'api', project: '', member: '', ...over,
  })
  const duplicate = { accepted: 0, duplicates: 1, revised: 0, rejected: [] }
  // Re-priced twice on the member; the first re-price and the call as first recorded come late.
  expect(await ingest([call(1, 0.25)])).toMatchObject({ accepted: 1, rejected: [] })
  expect(await ingest([call(1, 0.5, { revision: 1 })])).toMatchObject({ revised: 1, rejected: [] })
  expect(await ingest([call(1, 0.75, { revision: 2 })])).toMatchObject({ revised: 1, rejected: [] })
  expect(await ingest([call(1, 0.5, { revision: 1 })])).toEqual(duplicate)
  expect(await ingest([call(1, 0.25)])).toEqual(duplicate)
  // An imported answer whose revision the proxied call 1 superseded; it comes late as first sent.
  expect(await ingest([call(2, 0.125, { source: 'import' })])).toMatchObject({ accepted: 1, rejected: [] })
  expect(await ingest([call(2, 0, { source: 'import', revision: 1, superseded_by: 1, input_tokens: 0, output_tokens: 0 })])).toMatchObject({ revised: 1, rejected: [] })
  expect(await ingest([call(2, 0.125, { source: 'import' })])).toEqual(duplicate)

  const held = await store.all<any>("SELECT origin_id, cost_usd, revision, superseded_by FROM calls WHERE member = 'alice' ORDER BY origin_id")
  expect(held.map((r) => [Number(r.origin_id), Number(r.cost_usd), Number(r.revision), r.superseded_by !== null])).toEqual([[1, 0.75, 2, false], [2, 0, 1, true]])
  const day = (await store.get<{ money: number; n: number }>('SELECT sum(cost_usd) AS money, sum(requests) AS n FROM dash_day'))!
  expect([Number(day.money), Number(day.n)]).toEqual([0.75, 1])
  expect((await request(`${team.url}/api/dashboard/summary`)).json()).toMatchObject({ today_spend_usd: 0.75, today_requests: 1 })
})
