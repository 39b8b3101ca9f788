import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

let meter: Record<string, string> = {}

/** Accounts whose hints are the same (one ChatGPT token in two workspaces, short keys all `…`) stay apart. */
describe('plan accounts with the same hint', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream((req) =>
      req.url.endsWith('/responses')
        ? { status: 200, headers: { 'content-type': 'text/event-stream', ...meter }, body: fixture('openai-responses/responses-stream-basic.sse') }
        : { status: 200, headers: { 'content-type': 'application/json', ...meter }, body: fixture('openai-chat/chat-nonstream-cached.json') },
    )
    t = await startTestServer({ metrics: { enabled: true } }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('one ChatGPT token in two workspaces: two accounts with ids of their own, both in /metrics', async () => {
    const reset = String(Math.floor(Date.now() / 1000) + 7200)
    const token = 'Bearer eyJhbGciOiJSUzI1NiJ9.one-token-two-workspaces.wwww'
    for (const [ws, used] of [['ws_one', '20'], ['ws_two', '70']]) {
      meter = { 'x-codex-primary-used-percent': used, 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': reset }
      const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, { authorization: token, 'chatgpt-account-id': ws })
      expect(r.status).toBe(200)
    }
    const accounts = ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).filter((a) => a.provider === 'chatgpt')
    expect(accounts.map((a) => [a.account_hint, a.windows[0].utilization])).toEqual([['eyJ…wwww', 0.7], ['eyJ…wwww', 0.2]])
    const ids = accounts.map((a) => a.account_id)
    expect(ids[0]).toMatch(/^[0-9a-f]{16}$/)
    expect(ids[1]).toMatch(/^[0-9a-f]{16}$/)
    expect(ids[0]).not.toBe(ids[1])
    const text = (await request(`${t.url}/metrics`)).text
    const series = text.split('\n').filter((l) => l.startsWith('burnrate_plan_utilization_ratio{') && l.includes('provider="chatgpt"'))
    expect(series.sort()).toEqual(
      [
        `burnrate_plan_utilization_ratio{provider="chatgpt",account="eyJ…wwww",account_id="${ids[0]}",window="5h"} 0.7`,
        `burnrate_plan_utilization_ratio{provider="chatgpt",account="eyJ…wwww",account_id="${ids[1]}",window="5h"} 0.2`,
      ].sort(),
    )
    expect(text).not.toContain('one-token-two-workspaces')
  })

  it('two short API keys (both hinted `…`) are two accounts, in the API and in /metrics; the id is the same on the next call', async () => {
    meter = { 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '90', 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '500' }
    await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-short1' })
    meter = { 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '40', 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '100' }
    await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-short2' })
    const openai = async () => ((await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]).filter((a) => a.provider === 'openai')
    const first = await openai()
    expect(first.map((a) => [a.account_hint, a.windows[0].utilization])).toEqual([['…', 0.6], ['…', 0.1]])
    expect(first[0].account_id).not.toBe(first[1].account_id)
    const text = (await request(`${t.url}/metrics`)).text
    const requests = text.split('\n').filter((l) => l.startsWith('burnrate_plan_utilization_ratio{provider="openai"') && l.includes('window="requests"'))
    expect(requests.map((l) => l.split(' ').pop()).sort()).toEqual(['0.1', '0.6'])
    expect(text).not.toContain('sk-short')
    // Stable: the same key is the same account (and series) on its next call.
    await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-short1' })
    const again = await openai()
    expect(again.map((a) => a.account_id).sort()).toEqual(first.map((a: any) => a.account_id).sort())
  })
})
