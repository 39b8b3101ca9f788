import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * A session an agent starts from another names that one, and its calls are the other's, as a
 * Codex sub-agent's are: one session, one `session_limit_usd`. Claude Code 2.1.332 puts
 * `parent_session_id` in `metadata.user_id` for a teammate of an agent team (its lead starts it
 * with `--parent-session-id`; the real binary run so sends exactly this JSON); opencode 1.18.33
 * sends `x-parent-session-id` with a sub-agent's (task tool's) own session id in
 * `x-session-affinity` and `X-Session-Id`. Headers and body as the CLIs' bundled code builds them.
 */

const LEAD = '5e0c2d1a-7b3f-4c8e-9a6d-1f2e3d4c5b6a'
const TEAMMATE = '8a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d'
const OC_PARENT = 'ses_0f1e2d3c4b5aQrStUvWxYzAbCd'
const OC_CHILD = 'ses_1a2b3c4d5e6fGhIjKlMnOpQrSt'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  // 1000 input and 1000 output tokens of Sonnet 4.5: $0.018 a call.
  const answer = JSON.stringify({
    id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929',
    content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1000, output_tokens: 1000 },
  })
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer }))
  t = await startTestServer(
    {
      budgets: {
        rules: [
          { api_key_pattern: 'sk-ant-api03-cc-*', agent: 'claude-code', session_limit_usd: 0.01, action: 'block' },
          { api_key_pattern: 'sk-ant-api03-oc-*', agent: 'opencode', session_limit_usd: 0.01, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function claudeCode(key: string, session: string, parent?: string) {
  const userId = JSON.stringify({ device_id: 'f'.repeat(64), account_uuid: '', session_id: session, ...(parent ? { parent_session_id: parent } : {}) })
  return request(`${t.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'claude-cli/2.1.332 (external, cli)',
      'x-app': 'cli',
      'X-Claude-Code-Session-Id': session,
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5-20250929', max_tokens: 64, metadata: { user_id: userId }, messages: [{ role: 'user', content: 'hi' }] }),
  })
}

function opencode(key: string, session: string, parent?: string) {
  return request(`${t.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'opencode/1.18.33',
      'x-session-affinity': session,
      'X-Session-Id': session,
      ...(parent ? { 'x-parent-session-id': parent } : {}),
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5-20250929', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
  })
}

describe('a child session is its parent session', () => {
  it("Claude Code: a teammate's calls (parent_session_id) are its lead's session, and its session_limit_usd caps them", async () => {
    const key = 'sk-ant-api03-cc-000000000000000001'
    const lead = await recorded(t, () => claudeCode(key, LEAD))
    expect(lead).toMatchObject({ agent: 'claude-code', session: LEAD, status: 200 })
    let status = 0
    const mate = await recorded(t, async () => {
      status = (await claudeCode(key, TEAMMATE, LEAD)).status
    })
    expect(mate).toMatchObject({ agent: 'claude-code', session: LEAD })
    expect(status).toBe(429)
  })

  it("opencode: a sub-agent's calls (x-parent-session-id) are its parent's session, and its session_limit_usd caps them", async () => {
    const key = 'sk-ant-api03-oc-000000000000000001'
    const parent = await recorded(t, () => opencode(key, OC_PARENT))
    expect(parent).toMatchObject({ agent: 'opencode', session: OC_PARENT, status: 200 })
    let status = 0
    const child = await recorded(t, async () => {
      status = (await opencode(key, OC_CHILD, OC_PARENT)).status
    })
    // Refused by the parent's session cap: recorded as the 429 it is, answered to opencode as the
    // 403 it stops on (src/main/proxy/opencode-refusal.ts).
    expect(child).toMatchObject({ agent: 'opencode', session: OC_PARENT, status: 429, error: 'budget_exceeded' })
    expect(status).toBe(403)
  })

  it("Claude Code: a teammate's token counting, which names only its own session, is its lead's session too", async () => {
    const key = 'sk-ant-api03-other-0000000000000003'
    const lead = '7c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f'
    const mate = '9d8c7b6a-5f4e-4d3c-9b2a-1f0e9d8c7b6a'
    expect((await recorded(t, () => claudeCode(key, mate, lead))).session).toBe(lead)
    const counted = await recorded(t, () =>
      request(`${t.url}/v1/messages/count_tokens?beta=true`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'claude-cli/2.1.332 (external, cli)',
          'x-app': 'cli',
          'X-Claude-Code-Session-Id': mate,
          'anthropic-version': '2023-06-01',
          'x-api-key': key,
        },
        body: JSON.stringify({ model: 'claude-sonnet-4-5-20250929', messages: [{ role: 'user', content: 'hi' }] }),
      }),
    )
    expect(counted).toMatchObject({ agent: 'claude-code', session: lead })
  })

  it("opencode: a sub-agent's sub-agent (x-parent-session-id names the middle one) is the root session's", async () => {
    const key = 'sk-ant-api03-other-0000000000000004'
    const root = 'ses_2b3c4d5e6f7aHiJkLmNoPqRsTu'
    const middle = 'ses_3c4d5e6f7a8bIjKlMnOpQrStUv'
    const leaf = 'ses_4d5e6f7a8b9cJkLmNoPqRsTuVw'
    expect((await recorded(t, () => opencode(key, root))).session).toBe(root)
    expect((await recorded(t, () => opencode(key, middle, root))).session).toBe(root)
    expect((await recorded(t, () => opencode(key, leaf, middle))).session).toBe(root)
  })

  it('a parent id that is not a session id (spaces, too long) is ignored: the call keeps its own session', async () => {
    // Sessions of their own: TEAMMATE and OC_CHILD are remembered as their parents' above.
    const mate = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
    const child = 'ses_5e6f7a8b9c0dKlMnOpQrStUvWx'
    const a = await recorded(t, () => claudeCode('sk-ant-api03-other-0000000000000001', mate, 'not a session'))
    expect(a.session).toBe(mate)
    const b = await recorded(t, () => opencode('sk-ant-api03-other-0000000000000002', child, 'x'.repeat(201)))
    expect(b.session).toBe(child)
  })
})
