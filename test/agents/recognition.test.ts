import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Request captures of each agent (headers and body as the agent sends them; `source` in each
 * file says where its shape comes from), replayed through a real server. The agent and its own
 * session id must be recorded; `"session": "auto"` means the agent sends none, so an inferred
 * `auto-...` session is expected. A capture's `project`, where it has one, must be recorded too.
 */
interface Capture {
  source: string
  method: string
  path: string
  headers: Record<string, string>
  body: unknown
  /** `project`, where given: the working directory the agent states (else not checked). */
  expect: { agent: string; session: string; project?: string }
}

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'captures')
const CAPTURES: [string, Capture][] = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => [f, JSON.parse(readFileSync(join(DIR, f), 'utf8'))])

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
  t = await startTestServer({}, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

function send(c: Capture, extra: Record<string, string> = {}, body = c.body) {
  return request(t.url + c.path, { method: c.method, headers: { ...c.headers, ...extra }, body: JSON.stringify(body) })
}

const AUTO = /^auto-[0-9a-f]{12}$/

describe('agents are recognised from what they send', () => {
  it('has a capture of every agent the issue names', () => {
    const agents = new Set(CAPTURES.map(([, c]) => c.expect.agent))
    for (const a of ['claude-code', 'codex', 'gemini-cli', 'cursor', 'aider', 'opencode', 'openai-sdk', 'anthropic-sdk']) {
      expect(agents).toContain(a)
    }
    for (const [, c] of CAPTURES) expect(c.source.length).toBeGreaterThan(20)
  })

  for (const [file, c] of CAPTURES) {
    it(`${file}: ${c.expect.agent}, session ${c.expect.session}`, async () => {
      let status = 0
      const row = await recorded(t, async () => {
        status = (await send(c)).status
      })
      expect(status).toBe(200)
      expect(row.agent).toBe(c.expect.agent)
      if (c.expect.session === 'auto') expect(row.session).toMatch(AUTO)
      else expect(row.session).toBe(c.expect.session)
      if (c.expect.project !== undefined) expect(row.project).toBe(c.expect.project)
      // The client's own headers go upstream untouched.
      const got = upstream.requests[0]
      if (c.headers['user-agent']) expect(got.headers['user-agent']).toBe(c.headers['user-agent'])
      expect(JSON.parse(got.body.toString())).toEqual(c.body)
    })
  }

  it('X-Burnrate-Agent and X-Burnrate-Session override what the client sends, and are not forwarded', async () => {
    const c = CAPTURES.find(([f]) => f === 'claude-code-2.1.json')![1]
    const row = await recorded(t, () => send(c, { 'x-burnrate-agent': 'nightly-refactor', 'x-burnrate-session': 'run-42' }))
    expect(row).toMatchObject({ agent: 'nightly-refactor', session: 'run-42' })
    expect(Object.keys(upstream.requests[0].headers).filter((h) => h.startsWith('x-burnrate-'))).toEqual([])
  })

  it('with only X-Burnrate-Agent set, the client session id is still recorded', async () => {
    const c = CAPTURES.find(([f]) => f === 'codex-cli.json')![1]
    const row = await recorded(t, () => send(c, { 'x-burnrate-agent': 'ci-bot' }))
    expect(row).toMatchObject({ agent: 'ci-bot', session: c.expect.session })
  })

  it('a client that names no agent and no session is recorded with an empty agent and an inferred session', async () => {
    const row = await recorded(t, () =>
      request(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'curl/8.5.0', authorization: 'Bearer sk-proj-curl-000000000001' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }),
      }),
    )
    expect(row.agent).toBe('')
    expect(row.session).toMatch(AUTO)
  })
})

describe('sessions without a client session id', () => {
  it('consecutive calls of one agent and key share a session; another key or agent starts its own', async () => {
    const c = CAPTURES.find(([f]) => f === 'gemini-cli.json')![1]
    const a1 = await recorded(t, () => send(c, { 'x-goog-api-key': 'AIzaSy-session-key-A-000000001' }))
    const a2 = await recorded(t, () => send(c, { 'x-goog-api-key': 'AIzaSy-session-key-A-000000001' }))
    const b1 = await recorded(t, () => send(c, { 'x-goog-api-key': 'AIzaSy-session-key-B-000000001' }))
    const other = await recorded(t, () => send(c, { 'x-goog-api-key': 'AIzaSy-session-key-A-000000001', 'user-agent': 'OpenAI/JS 5.23.1' }))
    expect(a1.session).toMatch(AUTO)
    expect(a2.session).toBe(a1.session)
    expect(b1.session).toMatch(AUTO)
    expect(b1.session).not.toBe(a1.session)
    expect(other.agent).toBe('openai-sdk')
    expect(other.session).not.toBe(a1.session)
  })

  it('an open session continues after a restart (seeded from the ledger)', async () => {
    const up = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
    let s = await startTestServer({}, up.url)
    try {
      const c = CAPTURES.find(([f]) => f === 'aider.json')![1]
      const go = (srv: TestServer) =>
        recorded(srv, () => request(srv.url + c.path, { method: 'POST', headers: c.headers, body: JSON.stringify(c.body) }))
      const before = await go(s)
      s = await s.restart()
      const after = await go(s)
      expect(after.agent).toBe('aider')
      expect(after.session).toBe(before.session)
    } finally {
      await s.cleanup()
      await up.close()
    }
  })
})
