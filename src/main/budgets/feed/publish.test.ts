import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../../ledger/record'
import { type FeedRow, feedRowsOf, notifyPayloads } from './publish'
import { parseSnapshot, visibleIn } from './snapshot'

const call = (over: Partial<CallRecord>): CallRecord => ({
  ts: 0, provider: 'openai', model: 'gpt-5-nano', endpoint: 'chat.completions', api_key_hash: 'h1', key_hint: 'sk-t…0001', tenant: '', agent: '', session: '',
  status: 200, streamed: false, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0,
  cost_usd: 0, priced: true, estimated: false, latency_ms: 1, error: null, ...over,
})

describe('the calls feed between instances', () => {
  it('sums calls per key, scope, session and minute as the meters count them: money only; refusals, paid-for reads and imported calls not requests', () => {
    const t = Date.UTC(2026, 10, 28, 12, 0, 10)
    const rows = feedRowsOf(
      [
        call({ ts: t, cost_usd: 0.1, input_tokens: 10, output_tokens: 5 }),
        call({ ts: t + 20_000, cost_usd: 0.2, input_tokens: 1, output_tokens: 1 }),
        call({ ts: t + 30_000, cost_usd: 0, status: 429, error: 'budget_exceeded' }),
        call({ ts: t + 40_000, cost_usd: 0, endpoint: 'responses.retrieve' }),
        call({ ts: t + 40_000, cost_usd: 0, endpoint: 'messages.batches.results' }),
        call({ ts: t + 40_000, cost_usd: 0, source: 'import' }),
        call({ ts: t + 40_000, cost_usd: 5, billing: 'subscription' }),
        call({ ts: t + 60_000, cost_usd: 0.4 }),
      ],
      () => ['sk-t*'],
    )
    expect(rows).toHaveLength(2)
    const [first, next] = rows
    expect(first.slice(0, 9)).toEqual(['h1', 'sk-t…0001', 'openai', 'gpt-5-nano', null, '', '', '', Date.UTC(2026, 10, 28, 12, 0)])
    expect(first[9]).toBe(0.1 + 0.2)
    expect(first.slice(10)).toEqual([17, t + 40_000, 7, 3, ['sk-t*']])
    expect(next[8]).toBe(Date.UTC(2026, 10, 28, 12, 1))
    expect(next[9]).toBe(0.4)
  })

  it('splits the rows into payloads under PostgreSQL’s 8000-byte limit, numbered, every row once; too many or too long: none', () => {
    const rows: FeedRow[] = Array.from({ length: 500 }, (_, i) => [`hash-${i}`, 'sk-…', 'openai', 'gpt-5-nano', null, 'codex', 'team', `session-${i}`, 0, 0.001, 10, 0, 1, 1, ['sk-*']])
    const payloads = notifyPayloads('feed-id', rows)!
    expect(payloads.length).toBeGreaterThan(1)
    for (const p of payloads) expect(Buffer.byteLength(`18446744073709551615 ${p}`)).toBeLessThan(8000)
    const back = payloads.map((p) => JSON.parse(p))
    expect(back.map((b) => b.n)).toEqual(payloads.map((_, i) => i))
    expect(back.every((b) => b.i === 'feed-id')).toBe(true)
    expect(back.flatMap((b) => b.r)).toEqual(rows)
    expect(notifyPayloads('feed-id', [[...rows[0].slice(0, 7), 'x'.repeat(9000), ...rows[0].slice(8)] as FeedRow])).toBeNull()
    expect(notifyPayloads('feed-id', Array.from({ length: 20_000 }, () => rows[0]))).toBeNull()
  })

  it('tells a committed transaction visible in a snapshot as PostgreSQL does', () => {
    const s = parseSnapshot('100:110:102,105')
    expect([99, 100, 101, 103, 109].map((x) => visibleIn(x, s))).toEqual([true, true, true, true, true])
    expect([102, 105, 110, 111].map((x) => visibleIn(x, s))).toEqual([false, false, false, false])
    expect(visibleIn(5, parseSnapshot('7:7:'))).toBe(true)
  })
})
