import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * Two team instances on one PostgreSQL, each taking a member's copy of the same Batch API results
 * (alice's Burnrate ran the batch, bob's script downloaded its results too) at the same moment:
 * each looked for the other's copy, found none (not committed yet) and stored its own, so the
 * batch was counted twice. The answers' advisory locks (src/main/batch/twins.ts) make the second
 * wait for the first and see it: exactly one copy, whatever the interleaving.
 */
const h = usePostgres({ upstream: false })
const ALICE = 'team-token-alice-race-8d3f1a'
const BOB = 'team-token-bob-race-2c7e9b'
const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }, { name: 'bob', token: BOB }] } }
const ROUNDS = 30
const PER_ROUND = 12

function call(id: number, round: number, i: number): IngestCall {
  return {
    id, t: new Date(Date.now() - 1000).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-batch-race-01'),
    tenant: '', agent: '', session: '', status: 200, streamed: false, input_tokens: 100 + i, output_tokens: 20, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.00001, priced: true, estimated: false, latency_ms: 0,
    response_id: `chatcmpl-race-${round}-${i}`, source: 'proxy', billing: 'api', project: '', member: '', endpoint: 'batch.chat.completions',
  } as IngestCall
}

const send = (t: TestServer, token: string, calls: IngestCall[]) => postJson(`${t.url}/api/ingest`, { calls }, { authorization: `Bearer ${token}` })

describe('two team instances taking two members\' copies of one batch at once', () => {
  it('store and count exactly one copy of each request, round after round', async () => {
    const url = h.database()
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const store = h.store(url)
    for (let round = 0; round < ROUNDS; round++) {
      const ids = Array.from({ length: PER_ROUND }, (_, i) => i)
      // Each member under ids of its own; bob's in the other order, so the two batches overlap every way.
      const alice = ids.map((i) => call(1000 * round + i + 1, round, i))
      const bob = ids.map((i) => call(1000 * round + i + 1, round, PER_ROUND - 1 - i))
      const [ra, rb] = await Promise.all([send(a, ALICE, alice), send(b, BOB, bob)])
      expect(ra.status, String(ra.body)).toBe(200)
      expect(rb.status, String(rb.body)).toBe(200)
      const got = [ra.json(), rb.json()]
      expect(got[0].accepted + got[1].accepted, `round ${round}: ${JSON.stringify(got)}`).toBe(PER_ROUND)
      expect(got[0].duplicates + got[1].duplicates).toBe(PER_ROUND)
      const rows = await store.all<{ response_id: string; n: number }>(
        "SELECT response_id, count(*)::int AS n FROM calls WHERE response_id LIKE @like GROUP BY response_id HAVING count(*) <> 1",
        { like: `chatcmpl-race-${round}-%` },
      )
      expect(rows, `round ${round}`).toEqual([])
    }
    const total = await store.get<{ n: number }>("SELECT count(*)::int AS n FROM calls WHERE response_id LIKE 'chatcmpl-race-%'")
    expect(total!.n).toBe(ROUNDS * PER_ROUND)
    // The rollups counted each once too.
    const requests = await store.get<{ n: number }>('SELECT COALESCE(sum(requests), 0)::int AS n FROM dash_day')
    expect(requests!.n).toBe(ROUNDS * PER_ROUND)
  })
})
