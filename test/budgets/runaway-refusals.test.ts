import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/** Runaway checks that must not refuse a working agent: retries, refused calls, plan usage (Claude Code's request shape). */

const capture = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../agents/captures/claude-code-2.1.json'), 'utf8'))
const task = capture.body.messages[0]
const toolUse = (id: string, command: string) => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: { command } }] })
const toolResult = (id: string, text: string) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: text }] })

function body(messages: unknown[], session: string) {
  const userId = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: session })
  return JSON.stringify({ ...capture.body, messages, metadata: { user_id: userId } })
}

/** Claude Code's call with an API key (x-api-key) or, logged in with a Claude plan, its OAuth token (sk-ant-oat…, as a bearer token alone). */
function call(t: TestServer, key: string, b: string, extra: Record<string, string> = {}) {
  const { 'x-api-key': _, ...headers } = capture.headers
  const auth = key.startsWith('sk-ant-oat') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key }
  return request(`${t.url}${capture.path}`, { method: 'POST', headers: { ...headers, ...auth, ...extra }, body: b })
}

let upstream: MockUpstream
/** Calls the provider answers 529 overloaded before it recovers. */
let overloaded = 0
let block: TestServer
/** Loops blocked at 3 turns; keys sk-ant-api03-rpm-* get one request a minute. */
let rpm: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => {
    if (overloaded > 0) {
      overloaded--
      return { status: 529, headers: { 'content-type': 'application/json' }, body: fixture('errors/anthropic-529-overloaded.json') }
    }
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('anthropic/messages-stream-text.sse') }
  })
  block = await startTestServer({ runaway: { loop: { action: 'block' } } }, upstream.url) // repeats 5 in 10 minutes (the defaults)
  rpm = await startTestServer(
    {
      runaway: { loop: { action: 'block', repeats: 3 } },
      budgets: { rules: [{ api_key_pattern: 'sk-ant-api03-rpm-*', requests_per_minute: 1, action: 'block' }] },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await block.cleanup()
  await rpm.cleanup()
  await upstream.close()
})

describe('retries are not loop turns', () => {
  it("the SDK's resends of one request through a provider outage (529 x4) reach the provider once it recovers", async () => {
    const session = 'aaaaaaaa-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    // Turn 2 of a working session: the task, a tool call, its result.
    const b = body([task, toolUse('toolu_01Xa', 'ls'), toolResult('toolu_01Xa', 'src test')], session)
    overloaded = 4
    const statuses: number[] = []
    // The Anthropic SDK (Claude Code) resends the identical body on 529.
    for (let retry = 0; retry < 5; retry++) {
      const r = await call(block, 'sk-ant-api03-retry-0001', b, retry ? { 'x-stainless-retry-count': String(retry) } : {})
      statuses.push(r.status)
    }
    expect(statuses).toEqual([529, 529, 529, 529, 200])
  })
})

describe("calls Burnrate refuses for something else are not loop turns", () => {
  it('a rate-limited agent is told to retry (rate_limited, x-should-retry: true) on every call, never loop_detected', async () => {
    const session = 'dddddddd-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    const key = 'sk-ant-api03-rpm-0001'
    const stuck = (n: number) => {
      const messages: unknown[] = [task]
      for (let i = 0; i < n; i++) messages.push(toolUse('toolu_01Xb', 'npm test'), toolResult('toolu_01Xb', 'Error: Cannot find module'))
      return body(messages, session)
    }
    expect((await call(rpm, key, stuck(1))).status).toBe(200) // the minute's one request, and the tail's first turn
    const answers: string[] = []
    // Refused calls, each sent twice (the SDK's retry), the conversation different each time.
    for (const n of [2, 3, 4]) {
      for (let retry = 0; retry < 2; retry++) {
        const r = await call(rpm, key, stuck(n), retry ? { 'x-stainless-retry-count': String(retry) } : {})
        answers.push(`${r.status} ${r.json().error.type} ${r.headers['x-should-retry']}`)
      }
    }
    expect(answers).toEqual(Array(6).fill('429 rate_limited true'))
  })
})

describe('the spend rate counts money only', () => {
  let rate: TestServer
  beforeAll(async () => {
    rate = await startTestServer({ runaway: { loop: { action: 'off' }, spend_rate: { usd_per_minute: 0.000001, action: 'block' } } }, upstream.url)
  })
  afterAll(async () => {
    await rate.cleanup()
  })

  it("a plan (subscription) session is not refused for its calls' API-equivalent value", async () => {
    const session = 'cccccccc-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await call(rate, 'sk-ant-oat01-plan-0001', body([task], session))).status)
    expect(statuses).toEqual([200, 200, 200])
  })

  it('an API key session is, once it spends more than the limit', async () => {
    const session = 'eeeeeeee-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    expect((await call(rate, 'sk-ant-api03-money-0001', body([task], session))).status).toBe(200)
    await eventually(async () => (await call(rate, 'sk-ant-api03-money-0001', body([task], session))).status === 429)
  })
})
