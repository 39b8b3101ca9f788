import { describe, expect, it } from 'vitest'
import { postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { lastCallId, rowsAfter } from './ledger'

/**
 * Codex (codex-rs, codex-api/src/endpoint/compact.rs) compacts a long thread with
 * `POST {base}/responses/compact` (path "responses/compact"), a model call OpenAI bills like
 * any response; its JSON answer carries `usage` (object "response.compaction").
 */
const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: 'sk-compact-big-*', daily_limit_usd: 0.00005, action: 'block', reserve: 'max_tokens' }] },
})

const COMPACTION = {
  id: 'resp_compact_001',
  object: 'response.compaction',
  created_at: 1_764_967_971,
  output: [
    { id: 'msg_1', type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_text', text: 'fix the bug' }] },
    { id: 'cmp_1', type: 'compaction', encrypted_content: 'gAAAA...' },
  ],
  usage: { input_tokens: 120_000, input_tokens_details: { cached_tokens: 100_000 }, output_tokens: 4_000, output_tokens_details: { reasoning_tokens: 3_000 }, total_tokens: 124_000 },
}

const CODEX = { 'user-agent': 'codex_cli_rs/0.171.0 (Linux; x86_64) dumb', originator: 'codex_exec', 'thread-id': '019a0000-0000-7000-8000-000000000001' }

const compaction = (text = 'fix the bug') => ({
  model: 'gpt-5-2025-08-07',
  instructions: 'You are Codex.',
  input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }],
})

describe('Codex remote compaction (POST /v1/responses/compact)', () => {
  it('is metered with the usage its answer reports, as endpoint responses.compact', async () => {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(COMPACTION) }))
    const before = await lastCallId(s.t)
    const res = await postJson(s.t.url + '/v1/responses/compact', compaction(), { authorization: 'Bearer sk-test-codex-compact-0001', ...CODEX })
    expect(res.status).toBe(200)
    expect(s.upstream.requests.at(-1)!.url).toBe('/v1/responses/compact')
    const row = (await rowsAfter(s.t, before, 1)).at(-1)
    expect(row.agent).toBe('codex')
    expect(row.endpoint).toBe('responses.compact')
    expect(row.model).toBe('gpt-5-2025-08-07')
    expect({ input: row.input_tokens, cacheRead: row.cache_read_tokens, output: row.output_tokens }).toEqual({ input: 120_000, cacheRead: 100_000, output: 4_000 })
    expect(row.cost_usd).toBeGreaterThan(0)
  })

  it('is held to a block rule: its worst case is reserved before it is sent', async () => {
    const before = s.upstream.requests.length
    // No max_output_tokens: 32,768 output tokens of gpt-5 could cost far more than the rule's $0.00005.
    const res = await postJson(s.t.url + '/v1/responses/compact', compaction(), { authorization: 'Bearer sk-compact-big-0000000001', ...CODEX })
    expect(res.status).toBe(429)
    // Codex is answered in the form it stops on (README: Budgets).
    expect(res.json().error).toMatchObject({ type: 'usage_limit_reached', code: 'budget_exceeded' })
    expect(s.upstream.requests.length).toBe(before)
  })

  it('one whose answer is cut before its usage is estimated from the prompt', async () => {
    const partial = JSON.stringify(COMPACTION).slice(0, 120)
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, chunks: [Buffer.from(partial), Buffer.from('x')], resetAfterChunks: 1 }))
    const before = await lastCallId(s.t)
    await request(s.t.url + '/v1/responses/compact', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test-codex-compact-0002', ...CODEX },
      body: JSON.stringify(compaction('lorem ipsum dolor sit amet '.repeat(2000))),
    }).catch(() => undefined)
    const row = (await rowsAfter(s.t, before, 1)).at(-1)
    expect(row.endpoint).toBe('responses.compact')
    expect(row.estimated).toBe(1)
    expect(row.input_tokens).toBeGreaterThan(5000)
    expect(row.cost_usd).toBeGreaterThan(0)
  })
})
