import { describe, expect, it } from 'vitest'
import type { CallLedger } from '../../src/main/ledger/types'
import { PRUNE_BATCH, PRUNE_SCAN, retentionCutoff } from '../../src/main/ledger/retention'
import type { PostgresStore } from '../../src/main/storage/postgres'
import type { IngestCall } from '../../src/shared/api'
import { keyHash, makeCall } from '../dashboard/seed'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Retention on PostgreSQL in bounded steps: a step looks at no more than PRUNE_SCAN old calls
 * from where the last one stopped, as SQLite's. Before, each step read through every old call
 * retention keeps (here a session still in use) to find its batch: with hundreds of thousands of
 * them a step held the retention row, which team ingest, imports and batch results wait on, for
 * as long as that took. The rollups keep their totals whatever the steps delete.
 */
const DAY = 86_400_000
const MINUTE = 60_000
const h = usePostgres({ upstream: false })

/** What the dashboard and reports answer from, whatever retention pruned. */
async function totals(store: PostgresStore): Promise<Record<string, { requests: number; cost: number }>> {
  const out: Record<string, { requests: number; cost: number }> = {}
  for (const table of ['dash_day', 'dash_hour', 'dash_dim_day', 'dash_dim_hour', 'dash_session']) {
    const r = (await store.get<{ requests: number; cost: number }>(`SELECT COALESCE(sum(requests), 0) AS requests, COALESCE(sum(cost_usd), 0) AS cost FROM ${table}`))!
    out[table] = { requests: Number(r.requests), cost: Number(r.cost) }
  }
  return out
}

const ids = async (store: PostgresStore, before: number) =>
  (await store.all<{ id: number }>('SELECT id FROM calls WHERE ts < @before ORDER BY ts, id', { before })).map((r) => Number(r.id))

describe('retention steps on PostgreSQL', () => {
  it('look at a bounded number of old calls each, going on from where the last stopped, and keep the totals exact', async () => {
    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, config: { timezone: 'UTC' } })
    const ledger: CallLedger = t.server.ledger
    const now = Date.now()
    const first = now - 300 * DAY
    let ts = first
    const pruneable = (n: number) => {
      // Two at each instant (a batch's results can share one), out of any session.
      for (let i = 0; i < n; i++) ledger.record(makeCall({ ts: (ts += i % 2 === 0 ? MINUTE : 0), session: '', cost_usd: 0.000137 }))
    }
    // Oldest first: 100 that may go, then more kept calls than a step looks at (a session in use
    // today), then 3.25 batches that may go.
    pruneable(100)
    const kept = PRUNE_SCAN + 700
    for (let i = 0; i < kept; i++) ledger.record(makeCall({ ts: (ts += MINUTE), session: 'live', cost_usd: 0.000251 }))
    pruneable(3 * PRUNE_BATCH + 123)
    ledger.record(makeCall({ ts: now, session: 'live', cost_usd: 0.0003 }))
    ledger.record(makeCall({ ts: now, session: '', cost_usd: 0.0003 }))
    expect(await ledger.flushed()).toBe(true)

    const cutoff = retentionCutoff(32, now)
    const old = await ids(store, cutoff)
    expect(old.length).toBe(100 + kept + 3 * PRUNE_BATCH + 123)
    const at = new Map(old.map((id, i) => [id, i]))
    const before = await totals(store)
    expect(before.dash_day.requests).toBe(old.length + 2)

    let left = new Set(old)
    const deleted: number[] = []
    for (let step = 0; step < 20; step++) {
      const n = await ledger.prune(cutoff, PRUNE_BATCH)
      const now = new Set(await ids(store, cutoff))
      const gone = [...left].filter((id) => !now.has(id))
      left = now
      expect(n).toBe(gone.length)
      deleted.push(n)
      // The calls a step deleted lie within the PRUNE_SCAN old calls it looked at.
      if (gone.length > 0) {
        const span = Math.max(...gone.map((id) => at.get(id)!)) - Math.min(...gone.map((id) => at.get(id)!)) + 1
        expect({ step, span: span <= PRUNE_SCAN }).toEqual({ step, span: true })
      }
      expect(n).toBeLessThanOrEqual(PRUNE_BATCH)
      // Nothing a step deletes leaves the rollups.
      expect(await totals(store)).toEqual(before)
      if (n < PRUNE_BATCH && !ledger.pruneUnfinished) break
    }
    // Every call that may go went, once; the kept ones and today's stay.
    expect(deleted.reduce((a, b) => a + b, 0)).toBe(100 + 3 * PRUNE_BATCH + 123)
    expect(left.size).toBe(kept)
    expect(Number((await store.get<{ n: number }>('SELECT count(*) AS n FROM calls'))!.n)).toBe(kept + 2)
    // The pass is over: another step looks from the oldest again and finds nothing to delete.
    expect(await ledger.prune(cutoff, PRUNE_BATCH)).toBe(0)
    expect(ledger.pruneUnfinished).toBe(false)
  })

  it('prune each call once when two instances on one database take turns, the totals exact', async () => {
    const ALICE = 'team-token-alice-retention-steps-91'
    const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } }
    const url = h.database()
    const store = h.store(url)
    const [a, b] = [await h.server({ url, config }), await h.server({ url, config })]
    const now = Date.now()
    const first = now - 200 * DAY
    // Own calls of a: a kept session in use between ones that may go; and alice's calls on b, her last kept.
    for (let i = 0; i < 2 * PRUNE_SCAN; i++) {
      a.server.ledger.record(makeCall({ ts: first + i * MINUTE, session: i % 4 === 0 ? '' : 'live', cost_usd: 0.000173 }))
    }
    a.server.ledger.record(makeCall({ ts: now, session: 'live', cost_usd: 0.0003 }))
    expect(await a.server.ledger.flushed()).toBe(true)
    const member = (id: number): IngestCall => ({
      id, t: new Date(first + id * MINUTE + 7).toISOString(), provider: 'openai', model: 'gpt-4o-mini', api_key_hash: keyHash('sk-proj-steps-0001'),
      key_hint: 'sk-…0001', tenant: '', agent: 'codex', session: 'm', status: 200, streamed: false, input_tokens: 100, output_tokens: 10,
      cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.000211, priced: true, estimated: false, latency_ms: 80,
      response_id: `resp_steps_${id}`, source: 'proxy', billing: 'api', project: '', member: '',
    })
    for (let from = 1; from <= 3000; from += 1000) {
      const calls = Array.from({ length: 1000 }, (_, i) => member(from + i))
      expect((await postJson(`${b.url}/api/ingest`, { calls }, { authorization: `Bearer ${ALICE}` })).json()).toMatchObject({ accepted: 1000 })
    }
    const cutoff = retentionCutoff(32, now)
    const before = await totals(store)
    const old = (await ids(store, cutoff)).length
    expect(old).toBe(2 * PRUNE_SCAN + 3000)
    // Steps alternate between the instances, each from where its own last step stopped.
    let deleted = 0
    for (let step = 0; step < 60; step++) {
      const ledger = (step % 2 === 0 ? a : b).server.ledger
      const n = await ledger.prune(cutoff, PRUNE_BATCH)
      expect(n).toBeLessThanOrEqual(PRUNE_BATCH)
      deleted += n
      expect(await totals(store)).toEqual(before)
      if ((await ids(store, cutoff)).length === old - PRUNE_SCAN / 2 - 2999) break
    }
    // A quarter of a's old calls, and every one of alice's but her last, once.
    expect(deleted).toBe(PRUNE_SCAN / 2 + 2999)
    expect((await ids(store, cutoff)).length).toBe(old - deleted)
    expect(Number((await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE member = 'alice'"))!.n)).toBe(1)
  })
})
