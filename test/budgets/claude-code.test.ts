import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { calcPrice } from '@pydantic/genai-prices'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { spentToday } from './support'

/**
 * The case: Claude Code asks for `max_tokens: 128000` on its default model, so the
 * worst case of a single call (~$2.03 here) is over a $2/day budget. Such a rule must let the
 * agent work until about $2 is spent, and only then refuse.
 */

const capture = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../agents/captures/claude-code-2.1.json'), 'utf8'),
)
const KEY = 'sk-ant-api03-budget-claude-code-0001'
const MODEL: string = capture.body.model
const LIMIT = 2

// Claude Code sends its whole system prompt and ~20 tool definitions on every call (~110 KB).
const tools = Array.from({ length: 20 }, (_, i) => ({
  name: `Tool${i}`,
  description: 'Runs a step of the agent. '.repeat(200),
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
}))
const body = JSON.stringify({ ...capture.body, max_tokens: 128_000, tools })

// A turn as Claude Code's calls look: most of the prompt read from the cache, a few thousand tokens out.
const USAGE = { input: 3, cacheWrite: 500, cacheRead: 30_000, output: 2_500 }
const stream = fixture('anthropic/messages-stream-text.sse')
  .toString('utf8')
  .replace(
    '"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,',
    `"usage":{"input_tokens":${USAGE.input},"cache_creation_input_tokens":${USAGE.cacheWrite},"cache_read_input_tokens":${USAGE.cacheRead},"cache_creation":{"ephemeral_5m_input_tokens":${USAGE.cacheWrite},`,
  )
  .replace(
    '"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}',
    `"usage":{"input_tokens":${USAGE.input},"cache_creation_input_tokens":${USAGE.cacheWrite},"cache_read_input_tokens":${USAGE.cacheRead},"output_tokens":${USAGE.output}}`,
  )
const CALL_COST = calcPrice(
  { input_tokens: USAGE.input + USAGE.cacheWrite + USAGE.cacheRead, cache_write_tokens: USAGE.cacheWrite, cache_read_tokens: USAGE.cacheRead, output_tokens: USAGE.output },
  MODEL,
  { providerId: 'anthropic' },
)!.total_price
const WORST_CASE = calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(body) / 3), output_tokens: 128_000 }, MODEL, { providerId: 'anthropic' })!.total_price

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: stream }))
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-ant-*', daily_limit_usd: LIMIT, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function claudeCall() {
  return request(`${t.url}${capture.path}`, { method: 'POST', headers: { ...capture.headers, 'x-api-key': KEY }, body })
}

describe('Claude Code under a $2/day block rule', () => {
  it('works until about $2 is spent, then is refused', async () => {
    expect(stream).toContain(`"output_tokens":${USAGE.output}`)
    // The old worst-case reservation refused the very first call at $0 spent.
    expect(WORST_CASE).toBeGreaterThan(LIMIT)
    let ok = 0
    let refusal: Awaited<ReturnType<typeof claudeCall>> | null = null
    for (let i = 0; i < 200 && !refusal; i++) {
      const r = await claudeCall()
      if (r.status === 200) ok++
      else refusal = r
    }
    expect(refusal?.status).toBe(429)
    expect(ok).toBe(Math.ceil(LIMIT / CALL_COST))
    const spent = spentToday(t, KEY)
    expect(spent).toBeCloseTo(ok * CALL_COST, 12)
    // Within one call of the limit: the overshoot bound for calls one after another.
    expect(spent).toBeGreaterThanOrEqual(LIMIT)
    expect(spent).toBeLessThan(LIMIT + CALL_COST)
    const e = refusal!.json().error
    expect(e).toMatchObject({ type: 'budget_exceeded', period: 'daily', limit_usd: LIMIT, api_key_pattern: 'sk-ant-*' })
    expect(refusal!.headers['x-should-retry']).toBe('false')
    // Reservations now follow what these calls produce: the output tokens of the answered calls,
    // learned under the provider and the model the request named.
    expect(budgetsOf(t.server.context).history.output('anthropic', MODEL)).toBe(USAGE.output)
    // And it stays refused.
    expect((await claudeCall()).status).toBe(429)
  })
})
