import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
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

function call(t: TestServer, key: string, b: string, extra: Record<string, string> = {}) {
  const auth = key.startsWith('sk-ant-oat') ? { authorization: `Bearer ${key}` } : { 'x-api-key': key }
  return request(`${t.url}${capture.path}`, { method: 'POST', headers: { ...capture.headers, ...auth, ...extra }, body: b })
}

let upstream: MockUpstream
/** Calls the provider answers 529 overloaded before it recovers. */
let overloaded = 0
let block: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => {
    if (overloaded > 0) {
      overloaded--
      return { status: 529, headers: { 'content-type': 'application/json' }, body: fixture('errors/anthropic-529-overloaded.json') }
    }
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('anthropic/messages-stream-text.sse') }
  })
  block = await startTestServer({ runaway: { loop: { action: 'block' } } }, upstream.url) // repeats 5 in 10 minutes (the defaults)
})
afterAll(async () => {
  await block.cleanup()
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
