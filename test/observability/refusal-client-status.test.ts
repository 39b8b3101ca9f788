import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import type { MockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ledgerRows, startCollector, startFixtureUpstream } from './support'

/**
 * `burnrate_calls_total{status}` and a span's `http.response.status_code` are the HTTP status the
 * client got (README). A budget refusal sent to Qwen Code, Cline or opencode is a 403 (they retry
 * a 429 for hours), recorded in the ledger as the 429 it is: the label and the span said 429, a
 * status no client was sent.
 */

let upstream: MockUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer

beforeAll(async () => {
  upstream = await startFixtureUpstream()
  collector = await startCollector()
  t = await startTestServer(
    {
      timezone: 'UTC',
      metrics: { enabled: true },
      otel: { endpoint: collector.url, interval_ms: 200 },
      budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await upstream?.close()
})

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
const attr = (s: any, key: string) => s.attributes.find((a: any) => a.key === key)?.value

describe('a budget refusal sent as a 403', () => {
  it('is status="403" in burnrate_calls_total and on its span, as the client got it; the ledger keeps 429', async () => {
    const fixture = { 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
    const qwen = await postJson(`${t.url}/v1/chat/completions`, chat, { ...fixture, authorization: 'Bearer sk-blocked-0001', 'user-agent': 'QwenCode/0.24.0 (linux; x64)' })
    const other = await postJson(`${t.url}/v1/chat/completions`, chat, { ...fixture, authorization: 'Bearer sk-blocked-0002', 'user-agent': 'curl/8.5.0' })
    expect([qwen.status, other.status]).toEqual([403, 429])
    t.server.ledger.flush()
    expect(ledgerRows(t.dbFile).map((r) => [r.agent, r.status, r.error])).toEqual([
      ['qwen-code', 429, 'budget_exceeded'],
      [expect.any(String), 429, 'budget_exceeded'],
    ])

    const text = (await request(`${t.url}/metrics`)).text
    const calls = text.split('\n').filter((l) => l.startsWith('burnrate_calls_total{'))
    expect(calls.filter((l) => l.includes('agent="qwen-code"'))).toEqual([expect.stringContaining('status="403"')])
    expect(calls.filter((l) => !l.includes('agent="qwen-code"'))).toEqual([expect.stringContaining('status="429"')])
    // Still Burnrate's refusal, counted as one.
    expect(text).toContain('burnrate_refusals_total{reason="budget_exceeded",rule="sk-blocked-*"} 2')

    const spans = (await eventually(() => {
      const all = collector.traces.flatMap((b: any) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)))
      return all.length >= 2 ? all : null
    }, 15_000)) as any[]
    const statuses = spans.map((s) => [attr(s, 'gen_ai.agent.name')?.stringValue, Number(attr(s, 'http.response.status_code').intValue), attr(s, 'error.type').stringValue])
    expect(statuses).toContainEqual(['qwen-code', 403, 'budget_exceeded'])
    expect(statuses.filter((s) => s[0] !== 'qwen-code').map((s) => s[1])).toEqual([429])
  }, 30_000)
})
