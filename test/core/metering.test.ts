import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { fixture, sseChunks } from '../support/fixtures'
import { postJson, eventually } from '../support/http'
import { serverOverMockUpstream } from '../support/server'

/** The counts test/fixtures/README.md gives, normalised: input includes cache reads and writes. */
interface Expect {
  file: string
  path: string
  model: string
  pricing: string
  input: number
  cacheRead?: number
  cacheWrite?: number
  output: number
  reasoning?: number
  /** Server-side tool calls billed per call (the Responses API's `web_search_call` / `file_search_call` items). */
  webSearches?: number
  fileSearches?: number
  /** What a 200 answer that failed records as the call's error (null for every other). */
  error?: string
}

const CASES: Expect[] = [
  { file: 'openai-chat/chat-nonstream-cached.json', path: '/v1/chat/completions', model: 'gpt-4o-mini-2024-07-18', pricing: 'openai', input: 1149, cacheRead: 1024, output: 353 },
  { file: 'openai-chat/chat-nonstream-reasoning.json', path: '/v1/chat/completions', model: 'gpt-5-nano-2025-08-07', pricing: 'openai', input: 11, output: 228, reasoning: 192 },
  { file: 'openai-chat/chat-stream-with-usage.sse', path: '/v1/chat/completions', model: 'gpt-4o-mini-2024-07-18', pricing: 'openai', input: 78, output: 9 },
  { file: 'openai-chat/chat-stream-tool-call-with-usage.sse', path: '/v1/chat/completions', model: 'gpt-4o-mini-2024-07-18', pricing: 'openai', input: 53, output: 15 },
  { file: 'openai-chat/azure-chat-stream-with-usage-reasoning.sse', path: '/v1/chat/completions', model: 'gpt-5-nano-2025-08-07', pricing: 'openai', input: 15, output: 78, reasoning: 64 },
  { file: 'openai-responses/responses-nonstream-cached-reasoning.json', path: '/v1/responses', model: 'gpt-5-mini-2025-08-07', pricing: 'openai', input: 3700, cacheRead: 2560, output: 741, reasoning: 640, fileSearches: 1 },
  { file: 'openai-responses/responses-nonstream-reasoning.json', path: '/v1/responses', model: 'gpt-5-nano-2025-08-07', pricing: 'openai', input: 11, output: 327, reasoning: 320 },
  { file: 'openai-responses/responses-stream-cached-reasoning.sse', path: '/v1/responses', model: 'gpt-5-2025-08-07', pricing: 'openai', input: 9463, cacheRead: 8320, output: 582, reasoning: 512, webSearches: 1 },
  { file: 'openai-responses/responses-stream-basic.sse', path: '/v1/responses', model: 'gpt-4o-2024-08-06', pricing: 'openai', input: 278, output: 9 },
  { file: 'openai-responses/responses-stream-failed-insufficient-quota.sse', path: '/v1/responses', model: 'gpt-5-nano-2025-08-07', pricing: 'openai', input: 0, output: 0, error: 'insufficient_quota' },
  { file: 'anthropic/messages-nonstream-cache-write-and-read.json', path: '/v1/messages', model: 'claude-sonnet-4-5-20250929', pricing: 'anthropic', input: 3 + 418 + 1111, cacheWrite: 418, cacheRead: 1111, output: 33 },
  { file: 'anthropic/messages-nonstream-cache-read.json', path: '/v1/messages', model: 'claude-3-5-sonnet-20240620', pricing: 'anthropic', input: 4 + 1163, cacheRead: 1163, output: 202 },
  { file: 'anthropic/messages-nonstream-basic.json', path: '/v1/messages', model: 'claude-sonnet-4-5-20250929', pricing: 'anthropic', input: 12, output: 29 },
  { file: 'anthropic/messages-stream-cache-write.sse', path: '/v1/messages', model: 'claude-3-5-sonnet-20240620', pricing: 'anthropic', input: 4 + 1165, cacheWrite: 1165, output: 201 },
  { file: 'anthropic/messages-stream-cache-read.sse', path: '/v1/messages', model: 'claude-3-5-sonnet-20240620', pricing: 'anthropic', input: 4 + 1165, cacheRead: 1165, output: 221 },
  { file: 'anthropic/messages-stream-tool-use.sse', path: '/v1/messages', model: 'claude-3-5-sonnet-20240620', pricing: 'anthropic', input: 506, output: 153 },
  { file: 'anthropic/messages-stream-text.sse', path: '/v1/messages', model: 'claude-sonnet-4-5-20250929', pricing: 'anthropic', input: 20, output: 5 },
  { file: 'anthropic/messages-stream-server-tool-cache.sse', path: '/v1/messages', model: 'claude-sonnet-5', pricing: 'anthropic', input: 6 + 3337 + 6289, cacheWrite: 3337, cacheRead: 6289, output: 198 },
  // Compaction: every iteration is billed, so the call is their sum (the README's 281 input, 55096 cache read, 91 output).
  { file: 'anthropic/messages-stream-compaction-iterations.sse', path: '/v1/messages', model: 'claude-sonnet-4-6', pricing: 'anthropic', input: 281 + 55096, cacheRead: 55096, output: 91 },
]

const s = serverOverMockUpstream()

function replay(file: string) {
  const body = fixture(file)
  if (file.endsWith('.sse')) {
    s.upstream.setResponder(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8' },
      chunks: sseChunks(body),
      delayMs: 2,
    }))
  } else {
    s.upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }))
  }
}

function lastCall(db: Database.Database, n: number) {
  return db.prepare('SELECT * FROM calls WHERE id = ?').get(n) as any
}

describe('every fixture is metered and priced exactly', () => {
  let n = 0
  for (const c of CASES) {
    it(c.file, async () => {
      replay(c.file)
      const stream = c.file.endsWith('.sse')
      const res = await postJson(s.t.url + c.path, { model: c.model, stream, messages: [{ role: 'user', content: 'hi' }] }, {
        authorization: 'Bearer sk-test-metering-000000001',
      })
      expect(res.status).toBe(200)
      expect(res.body.equals(fixture(c.file))).toBe(true)
      const callId = ++n
      const db = new Database(s.t.dbFile, { readonly: true })
      try {
        const row = await eventually(() => lastCall(db, callId))
        expect(row.model).toBe(c.model)
        expect(row.input_tokens).toBe(c.input)
        expect(row.cache_read_tokens).toBe(c.cacheRead ?? 0)
        expect(row.cache_write_tokens).toBe(c.cacheWrite ?? 0)
        expect(row.output_tokens).toBe(c.output)
        expect(row.reasoning_tokens).toBe(c.reasoning ?? 0)
        expect(row.streamed).toBe(stream ? 1 : 0)
        expect(row.estimated).toBe(0)
        expect(row.status).toBe(200)
        const usage: Record<string, number> = { input_tokens: c.input, output_tokens: c.output }
        if (c.cacheRead) usage.cache_read_tokens = c.cacheRead
        if (c.cacheWrite) usage.cache_write_tokens = c.cacheWrite
        if (c.webSearches) usage.web_searches = c.webSearches
        if (c.fileSearches) usage.storage_searches = c.fileSearches
        if (c.input + c.output === 0) {
          expect(row.cost_usd).toBe(0)
        } else {
          const price = calcPrice(usage, c.model, { providerId: c.pricing, timestamp: new Date(row.ts) })
          expect(price).not.toBeNull()
          expect(row.cost_usd).toBe(price!.total_price)
          expect(row.cost_usd).toBeGreaterThan(0)
        }
        expect(row.priced).toBe(1)
        // A stream that failed in a 200 answer is a failed call, not a free success.
        expect(row.error).toBe(c.error ?? null)
        // The provider's id of the answer, for matching the call in the agent's own logs.
        const id = /"id"\s*:\s*"((?:msg_|resp_|chatcmpl-)[^"]+)"/.exec(fixture(c.file).toString())?.[1]
        expect(id).toBeTruthy()
        expect(row.response_id).toBe(id)
      } finally {
        db.close()
      }
    })
  }
})

describe('server-side tool calls of the Responses API are billed per call', () => {
  // OpenAI bills a web search at $10 and a file search at $2.50 per 1,000 calls on top of the
  // tokens; the usage object does not count them, the response's `output` items do.
  const cases = [
    {
      file: 'openai-responses/responses-stream-cached-reasoning.sse',
      model: 'gpt-5-2025-08-07',
      // gpt-5: $1.25 input, $0.125 cached input, $10 output per million tokens; one web search
      want: ((9463 - 8320) * 1.25 + 8320 * 0.125 + 582 * 10) / 1e6 + 10 / 1000,
    },
    {
      file: 'openai-responses/responses-nonstream-cached-reasoning.json',
      model: 'gpt-5-mini-2025-08-07',
      // gpt-5-mini: $0.25 input, $0.025 cached input, $2 output per million tokens; one file search
      want: ((3700 - 2560) * 0.25 + 2560 * 0.025 + 741 * 2) / 1e6 + 2.5 / 1000,
    },
  ]
  for (const c of cases) {
    it(c.file, async () => {
      replay(c.file)
      const stream = c.file.endsWith('.sse')
      const db = new Database(s.t.dbFile, { readonly: true })
      try {
        const before = (db.prepare('SELECT max(id) AS n FROM calls').get() as any).n ?? 0
        const res = await postJson(s.t.url + '/v1/responses', { model: c.model, stream, input: 'hi' }, { authorization: 'Bearer sk-test-metering-000000001' })
        expect(res.status).toBe(200)
        const row = await eventually(() => lastCall(db, before + 1))
        expect(row.model).toBe(c.model)
        expect(row.cost_usd).toBeCloseTo(c.want, 12)
      } finally {
        db.close()
      }
    })
  }
})
