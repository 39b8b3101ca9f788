import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

let util = '0.10'
describe('a Claude login is one plan account on /api/dashboard/plans', () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream((req) => ({
      status: 200,
      headers: {
        'content-type': 'application/json',
        'anthropic-ratelimit-unified-5h-utilization': util,
        'anthropic-ratelimit-unified-5h-reset': String(Math.floor((Date.now() + 2 * 3600_000) / 1000)),
      },
      body: req.url.includes('count_tokens') ? '{"input_tokens": 12}' : fixture('anthropic/messages-nonstream-basic.json'),
    }))
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })
  const plans = async () => (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
  const claude = (token: string, userId: string | null, path = '/v1/messages') =>
    postJson(`${t.url}${path}`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], ...(userId === null ? {} : { metadata: { user_id: userId } }) }, {
      authorization: `Bearer ${token}`,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'oauth-2025-04-20',
      'user-agent': 'claude-cli/2.1.332 (external, cli)',
    })

  it("a refreshed token whose first call is token counting (no metadata) is still the one account, and follows it", async () => {
    const account = '0b6e3d3c-1111-4222-8333-944445555666'
    const userId = JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: account, session_id: '11111111-2222-4333-8444-555555555555' })
    util = '0.10'
    expect((await claude('sk-ant-oat01-login-before-refresh-1111', userId)).status).toBe(200)
    // The token is refreshed; Claude Code's first call with the new token is a count_tokens (no metadata).
    util = '0.20'
    expect((await claude('sk-ant-oat01-login-after-refresh-2222', null, '/v1/messages/count_tokens')).status).toBe(200)
    util = '0.30'
    expect((await claude('sk-ant-oat01-login-after-refresh-2222', userId)).status).toBe(200)
    // further count_tokens calls of the new token
    util = '0.35'
    expect((await claude('sk-ant-oat01-login-after-refresh-2222', null, '/v1/messages/count_tokens')).status).toBe(200)
    const accounts = await plans()
    // README: the account_uuid also covers that token's calls without it, such as token counting: one account, at its latest reading.
    expect(accounts.map((a) => [a.account_hint, a.windows[0].utilization])).toEqual([['sk-…1111', 0.35]])
  })
})
