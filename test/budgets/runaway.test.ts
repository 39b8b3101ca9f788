import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getJson } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, callsOf, chat, replayJson } from './support'

/** Runaway agents with Claude Code's real request shape: a stuck loop, and a normal growing session. */

const capture = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../agents/captures/claude-code-2.1.json'), 'utf8'))
const KEY = 'sk-ant-api03-runaway-0001'

const task = capture.body.messages[0]
const toolUse = (id: string, command: string) => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: { command } }] })
const toolResult = (id: string, text: string) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: text }] })

/**
 * Turn n of an agent stuck retrying one failing command: the conversation grows, its tail stays the
 * same but for the tool call's id, which the API makes afresh for every call.
 */
function stuck(n: number, session: string) {
  const messages = [task]
  for (let i = 0; i <= n; i++) {
    const id = `toolu_01${'ABCDEFGHIJ'[i]}q90qw90lq917835lq9`
    messages.push(toolUse(id, 'npm test src/parser.ts'), toolResult(id, 'Error: Cannot find module src/parser.ts'))
  }
  return body(messages, session)
}

/** Turn n of a normal session: every turn runs a different command and gets a different result. */
function working(n: number, session: string) {
  const messages = [task]
  for (let i = 0; i <= n; i++) messages.push(toolUse(`toolu_${i}`, `sed -n ${i * 10},${i * 10 + 10}p src/parser.ts`), toolResult(`toolu_${i}`, `line ${i * 10}: const x${i} = parse(input${i})`))
  return body(messages, session)
}

function body(messages: unknown[], session: string) {
  const userId = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: session })
  return JSON.stringify({ ...capture.body, messages, metadata: { user_id: userId } })
}

function call(t: TestServer, b: string) {
  return request(`${t.url}${capture.path}`, { method: 'POST', headers: { ...capture.headers, 'x-api-key': KEY }, body: b })
}

let upstream: MockUpstream
let block: TestServer
let warn: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body: fixture('anthropic/messages-stream-text.sse'),
  }))
  block = await startTestServer({ runaway: { loop: { action: 'block', repeats: 4, window_minutes: 10 } } }, upstream.url)
  warn = await startTestServer(
    { runaway: { loop: { action: 'warn', repeats: 4 }, spend_rate: { usd_per_minute: NANO_COST * 1.5, action: 'warn' } } },
    upstream.url,
  )
})
afterAll(async () => {
  await block.cleanup()
  await warn.cleanup()
  await upstream.close()
})

describe('runaway loops', () => {
  it('block: the 4th identical tail from one session in 10 minutes is refused with 429 loop_detected, x-should-retry: false', async () => {
    const session = '11111111-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    for (let i = 0; i < 3; i++) expect((await call(block, stuck(i, session))).status).toBe(200)
    const before = upstream.requests.length
    const r = await call(block, stuck(3, session))
    expect(r.status).toBe(429)
    expect(upstream.requests.length).toBe(before)
    expect(r.headers['x-should-retry']).toBe('false')
    expect(r.json().error).toMatchObject({ type: 'loop_detected', session, repeats: 4, window_minutes: 10, model: capture.body.model })
    // Another session with the same content is its own.
    expect((await call(block, stuck(0, '22222222-1c4f-4a8e-b6d5-3f2e1a0c9b8d'))).status).toBe(200)
  })

  it('a normal long session (a growing conversation with new turns) never trips it', async () => {
    const session = '33333333-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    for (let i = 0; i < 25; i++) {
      const r = await call(block, working(i, session))
      expect(r.status).toBe(200)
      expect(r.headers['x-burnrate-runaway-warning']).toBeUndefined()
    }
  })

  it('warn: the call goes through with x-burnrate-runaway-warning, and the dashboard marks the session', async () => {
    const session = '44444444-1c4f-4a8e-b6d5-3f2e1a0c9b8d'
    // (This server also has a spend-rate alarm, which these calls trip too: only the loop part matters here.)
    for (let i = 0; i < 3; i++) expect((await call(warn, stuck(i, session))).headers['x-burnrate-runaway-warning'] ?? '').not.toMatch(/loop:/)
    const r = await call(warn, stuck(3, session))
    expect(r.status).toBe(200)
    expect(r.headers['x-burnrate-runaway-warning']).toMatch(/(^|, )loop: the same request tail 4 times in session 44444444/)
    const marks = (await getJson(`${warn.url}/api/dashboard/alerts`)).body.runaway
    expect(marks.filter((m: any) => m.kind === 'loop')).toEqual([expect.objectContaining({ kind: 'loop', action: 'warn', session, agent: 'claude-code', repeats: 4 })])
  })
})

describe('session spend-rate alarm', () => {
  it('warns once a session spends more than runaway.spend_rate.usd_per_minute', async () => {
    replayJson(upstream, NANO_FIXTURE)
    const key = 'sk-rate-aaaaaaaaaaaa-0001'
    const headers = { 'x-burnrate-session': 'burner' }
    expect((await chat(warn, key, {}, headers)).headers['x-burnrate-runaway-warning']).toBeUndefined()
    expect((await chat(warn, key, {}, headers)).headers['x-burnrate-runaway-warning']).toBeUndefined()
    expect(callsOf(warn, key)).toHaveLength(2)
    const r = await chat(warn, key, {}, headers)
    expect(r.status).toBe(200)
    expect(r.headers['x-burnrate-runaway-warning']).toMatch(/^spend_rate: /)
    const marks = (await getJson(`${warn.url}/api/dashboard/alerts`)).body.runaway
    expect(marks[0]).toMatchObject({ kind: 'spend_rate', session: 'burner' })
    expect(marks[0].usd_last_minute).toBeCloseTo(NANO_COST * 2, 15)
  })
})
