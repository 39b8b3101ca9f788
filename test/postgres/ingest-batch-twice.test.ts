import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Two members' Burnrates that read the same Batch API results file (one ran the batch, a teammate's
 * script downloaded its results too) each record its requests, and each sends them: the team
 * server, idempotent by (member, id) alone, stored and counted the one batch twice. A batch result
 * (its endpoint `batch.…`) another member sent already, the same provider's answer (its
 * response_id, model, endpoint and tokens), is now a duplicate.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }) })

const ALICE = 'team-token-alice-4b8d2f6a9e'
const BOB = 'team-token-bob-7c1e5a3d0f'

function call(id: number, over: Partial<IngestCall> = {}): IngestCall {
  return {
    id, t: new Date(Date.now() - 1000).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-batch-twice-01'),
    tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 120, output_tokens: 30, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.000027, priced: true, estimated: false, latency_ms: 0, response_id: 'chatcmpl-batch-1',
    source: 'proxy', billing: 'api', project: '', member: '', endpoint: 'batch.chat.completions', ...over,
  } as IngestCall
}

const send = (url: string, token: string, calls: IngestCall[]) => postJson(`${url}/api/ingest`, { calls }, { authorization: `Bearer ${token}` })

async function check(url: string): Promise<void> {
  // Alice's Burnrate read the results file: the batch's two requests.
  const a = await send(url, ALICE, [call(7), call(8, { response_id: 'chatcmpl-batch-2', output_tokens: 40, cost_usd: 0.000042 })])
  expect(a.json()).toMatchObject({ accepted: 2, duplicates: 0, rejected: [] })
  // Bob's read the same file a minute later (dated as its answers say, the same): his ids are his own.
  const b = await send(url, BOB, [
    call(3, { t: new Date(Date.now() - 500).toISOString() }),
    call(4, { response_id: 'chatcmpl-batch-2', output_tokens: 40, cost_usd: 0.000042 }),
    // A call of his own that happens to share an answer id, not a batch result: his.
    call(5, { endpoint: 'chat.completions' }),
  ])
  expect(b.status, String(b.body)).toBe(200)
  expect(b.json()).toMatchObject({ accepted: 1, duplicates: 2, rejected: [] })
  // Sent again, nothing moves.
  expect((await send(url, BOB, [call(3), call(4, { response_id: 'chatcmpl-batch-2', output_tokens: 40, cost_usd: 0.000042 })])).json()).toMatchObject({ accepted: 0, duplicates: 2 })
  const calls = (await request(`${url}/api/dashboard/export?range=24h`)).json().calls as IngestCall[]
  expect(calls.map((c) => [c.member, c.response_id]).sort()).toEqual([
    ['alice', 'chatcmpl-batch-1'],
    ['alice', 'chatcmpl-batch-2'],
    ['bob', 'chatcmpl-batch-1'],
  ])
  const costs = (await request(`${url}/api/dashboard/costs?group_by=member&range=24h`)).json()
  const by = Object.fromEntries(costs.rows.map((r: { key: string; cost_usd: number; requests: number }) => [r.key, [r.requests, r.cost_usd]]))
  expect(by).toEqual({ alice: [2, 0.000027 + 0.000042], bob: [1, 0.000027] })
}

describe('the same Batch API results sent by two members', () => {
  const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] } }

  it('are counted once on PostgreSQL', async () => {
    const t = await h.server({ config })
    await check(t.url)
  })

  it('are counted once on SQLite', async () => {
    const t = await h.server({ url: null, config })
    await check(t.url)
  })
})
