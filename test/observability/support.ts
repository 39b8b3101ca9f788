import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'
import { ledgerRows as allRows } from '../support/ledger-rows'
import type { CallRecord } from '../../src/main/ledger/record'
import { fixture, sseChunks } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

/** A mock provider that answers with the fixture named in the request's `x-fixture` header (status in `x-status`). */
export function startFixtureUpstream(): Promise<MockUpstream> {
  return startMockUpstream((req) => {
    const name = String(req.headers['x-fixture'] ?? '')
    const status = Number(req.headers['x-status'] ?? 200)
    const body = fixture(name)
    if (name.endsWith('.sse')) return { status, headers: { 'content-type': 'text/event-stream' }, chunks: sseChunks(body), delayMs: 1 }
    return { status, headers: { 'content-type': 'application/json' }, body }
  })
}

interface FixtureCall {
  path: string
  body: unknown
  fixture: string
  status?: number
  headers?: Record<string, string>
}

const openai = (key: string) => ({ authorization: `Bearer ${key}` })
const anthropic = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' })

/**
 * A run of recorded calls of every kind: three providers, JSON and streams, cache reads and
 * writes, reasoning, an upstream 429, several agents and tenants, and (with `refusedKey`
 * under a $0 block rule) a budget refusal.
 */
export function fixtureCalls(refusedKey = 'sk-blocked-0000000000001'): FixtureCall[] {
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
  const a = 'sk-proj-observability-aaaa1111'
  const b = 'sk-ant-observability-bbbb2222'
  return [
    { path: '/v1/chat/completions', body: chat, fixture: 'openai-chat/chat-nonstream-cached.json', headers: { ...openai(a), 'x-burnrate-agent': 'bot', 'x-burnrate-tenant': 'acme' } },
    { path: '/v1/chat/completions', body: chat, fixture: 'openai-chat/chat-nonstream-cached.json', headers: { ...openai(a), 'x-burnrate-agent': 'bot', 'x-burnrate-tenant': 'acme' } },
    { path: '/v1/chat/completions', body: { ...chat, stream: true, stream_options: { include_usage: true } }, fixture: 'openai-chat/chat-stream-with-usage.sse', headers: { ...openai(a), 'x-burnrate-tenant': 'globex' } },
    { path: '/v1/chat/completions', body: { model: 'gpt-5-nano', messages: [] }, fixture: 'openai-chat/chat-nonstream-reasoning.json', headers: openai(a) },
    { path: '/v1/responses', body: { model: 'gpt-5', input: 'x', stream: true }, fixture: 'openai-responses/responses-stream-cached-reasoning.sse', headers: { ...openai(a), 'x-burnrate-agent': 'bot' } },
    { path: '/v1/messages', body: { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [] }, fixture: 'anthropic/messages-nonstream-cache-write-and-read.json', headers: { ...anthropic(b), 'x-burnrate-agent': 'claude-code' } },
    { path: '/v1/messages', body: { model: 'claude-3-5-sonnet-20240620', max_tokens: 100, stream: true, messages: [] }, fixture: 'anthropic/messages-stream-cache-write.sse', headers: { ...anthropic(b), 'x-burnrate-tenant': 'acme' } },
    { path: '/v1beta/models/gemini-2.5-flash:generateContent', body: { contents: [] }, fixture: 'gemini/generate-content-cached-thoughts.json', headers: { 'x-goog-api-key': 'AIza-observability-cccc3333' } },
    { path: '/v1/chat/completions', body: chat, fixture: 'errors/openai-429-rate-limit-tpm.json', status: 429, headers: openai(a) },
    { path: '/v1/chat/completions', body: chat, fixture: 'openai-chat/chat-nonstream-cached.json', headers: openai(refusedKey) },
  ]
}

/** Sends every fixture call through the proxy at `url`; returns the statuses the clients got. */
export async function runFixtureCalls(url: string, calls = fixtureCalls()): Promise<number[]> {
  const statuses: number[] = []
  for (const c of calls) {
    const headers: Record<string, string> = { 'x-fixture': c.fixture, ...c.headers }
    if (c.status) headers['x-status'] = String(c.status)
    const r = await postJson(url + c.path, c.body, headers)
    statuses.push(r.status)
  }
  return statuses
}

export type Row = Omit<CallRecord, 'streamed' | 'priced' | 'estimated'> & { streamed: number; priced: number; estimated: number; id: number }

/** Every row of the ledger, in the order the calls were recorded. */
export function ledgerRows(dbFile: string): Row[] {
  return allRows(dbFile) as Row[]
}

/** Sums `value` of `rows` per key, in row order (the order the counters added them in). */
export function sumBy<T>(rows: T[], key: (r: T) => string, value: (r: T) => number): Map<string, number> {
  const out = new Map<string, number>()
  for (const r of rows) out.set(key(r), (out.get(key(r)) ?? 0) + value(r))
  return out
}

export function expectSameMap(actual: Map<string, number>, expected: Map<string, number>): void {
  expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort())
  for (const [k, v] of expected) expect(actual.get(k), k).toBe(v)
}

/** A loopback OTLP/HTTP (JSON) collector that keeps the metric and span exports it is sent. */
export async function startCollector(): Promise<{ url: string; metrics: any[]; traces: any[]; close(): Promise<void> }> {
  const metrics: any[] = []
  const traces: any[] = []
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    const body = JSON.parse(Buffer.concat(parts).toString('utf8'))
    if (req.url === '/v1/metrics') metrics.push(body)
    else if (req.url === '/v1/traces') traces.push(body)
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, metrics, traces, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** OTLP: the cumulative sum of counter `name` over its points with the string attributes `attrs`, in the latest export that has any (null: none has). */
export function otlpSum(bodies: readonly any[], name: string, attrs: Record<string, string>): number | null {
  const has = (p: any) => Object.entries(attrs).every(([k, v]) => p.attributes.some((a: any) => a.key === k && a.value.stringValue === v))
  for (const body of [...bodies].reverse()) {
    const found = (body.resourceMetrics as any[])
      .flatMap((rm) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics))
      .filter((m: any) => m.name === name)
      .flatMap((m: any) => (m.sum?.dataPoints ?? []).filter(has))
    if (found.length > 0) return found.reduce((s: number, p: any) => s + (p.asDouble ?? Number(p.asInt)), 0)
  }
  return null
}

/** The token counters' `type` label and the ledger column each counts. */
export const TOKEN_TYPES = [
  ['input', 'input_tokens'],
  ['output', 'output_tokens'],
  ['cache_read', 'cache_read_tokens'],
  ['cache_write', 'cache_write_tokens'],
  ['reasoning', 'reasoning_tokens'],
] as const
export type TokenType = (typeof TOKEN_TYPES)[number][0]
