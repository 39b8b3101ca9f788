import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { openSocket, rowsAfter } from '../support/ws-sessions'
import { type WsUpstream, startWsUpstream } from '../support/ws-upstream'
import { startCollector } from './support'

/**
 * `burnrate_calls_total{status}` and a span's `http.response.status_code` are the HTTP status the
 * client got (README). On the Responses WebSocket, opencode is sent a budget refusal as an error
 * frame of `status: 403` (the answer it stops on), recorded in the ledger as the 429 it is: the
 * label and the span said 429, a status opencode was never sent.
 */

let up: WsUpstream
let collector: Awaited<ReturnType<typeof startCollector>>
let t: TestServer
const seen: string[] = []

beforeAll(async () => {
  up = await startWsUpstream({ onConnection: (ws) => ws.on('message', (d) => seen.push(String(d))) })
  collector = await startCollector()
  t = await startTestServer(
    {
      timezone: 'UTC',
      metrics: { enabled: true },
      otel: { endpoint: collector.url, interval_ms: 200 },
      budgets: { rules: [{ api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' }] },
    },
    up.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await collector?.close()
  await up?.close()
})

const attr = (s: any, key: string) => s.attributes.find((a: any) => a.key === key)?.value
const create = JSON.stringify({ type: 'response.create', model: 'gpt-4o', input: 'hi' })

async function refusedOver(headers: Record<string, string>): Promise<any> {
  const c = await openSocket(t, '/v1/responses', { headers })
  c.ws.send(create)
  await eventually(() => c.frames.length === 1, 10_000)
  c.ws.close()
  return c.frames[0]
}

describe("a budget refusal on opencode's Responses WebSocket", () => {
  it('is status="403" in burnrate_calls_total and on its span, as opencode got it; the ledger keeps 429', async () => {
    const opencode = await refusedOver({ 'user-agent': 'opencode/1.18.33', 'openai-beta': 'responses_websockets=2026-02-06', authorization: 'Bearer sk-blocked-oc-0001' })
    const other = await refusedOver({ authorization: 'Bearer sk-blocked-oc-0002' })
    expect([opencode.status, other.status]).toEqual([403, 429])
    const rows = await rowsAfter(t, 0, 2)
    expect(rows.map((r) => [r.agent === 'opencode', r.status, r.error])).toEqual([
      [true, 429, 'budget_exceeded'],
      [false, 429, 'budget_exceeded'],
    ])

    const text = (await request(`${t.url}/metrics`)).text
    const calls = text.split('\n').filter((l) => l.startsWith('burnrate_calls_total{'))
    expect(calls.filter((l) => l.includes('agent="opencode"'))).toEqual([expect.stringContaining('status="403"')])
    expect(calls.filter((l) => !l.includes('agent="opencode"'))).toEqual([expect.stringContaining('status="429"')])
    expect(text).toContain('burnrate_refusals_total{reason="budget_exceeded",rule="sk-blocked-*"} 2')

    const spans = (await eventually(() => {
      const all = collector.traces.flatMap((b: any) => b.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((x: any) => x.spans)))
      return all.length >= 2 ? all : null
    }, 15_000)) as any[]
    const statuses = spans.map((x) => [attr(x, 'gen_ai.agent.name')?.stringValue, Number(attr(x, 'http.response.status_code').intValue)])
    expect(statuses).toContainEqual(['opencode', 403])
    expect(statuses.filter((x) => x[0] !== 'opencode').map((x) => x[1])).toEqual([429])
    expect(seen).toEqual([])
  }, 30_000)
})
