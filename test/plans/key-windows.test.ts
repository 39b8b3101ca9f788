import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { readKeyLimits } from '../../src/main/plans/key-limits'

/** The rate-limit headers the mock upstream answers with. */
let limits: Record<string, string> = {}

/** An API key's rate limits are windows of the length the vendor says, not all one minute. */
describe('per-key limit windows report their real length', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => ({
      status: 200,
      headers: { 'content-type': 'application/json', ...limits },
      body: fixture(req.url.includes('/messages') ? 'anthropic/messages-nonstream-basic.json' : 'openai-chat/chat-nonstream-cached.json'),
    }))
    t = await startTestServer({}, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  const windowsOf = async (provider: string) => {
    const accounts = (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]
    const a = accounts.find((x) => x.provider === provider)
    return Object.fromEntries(a.windows.map((w: any) => [w.name, w.window_minutes]))
  }

  it("Groq: x-ratelimit-*-requests is the requests per day, x-ratelimit-*-tokens the tokens per minute (Groq's rate-limit docs)", async () => {
    limits = {
      'x-ratelimit-limit-requests': '14400',
      'x-ratelimit-remaining-requests': '14370',
      'x-ratelimit-reset-requests': '2m59.56s',
      'x-ratelimit-limit-tokens': '18000',
      'x-ratelimit-remaining-tokens': '17997',
      'x-ratelimit-reset-tokens': '7.66s',
    }
    const r = await postJson(`${t.url}/groq/v1/chat/completions`, { model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer gsk-test-000000000001' })
    expect(r.status).toBe(200)
    expect(await windowsOf('groq')).toEqual({ requests: 1440, tokens: 1 })
  })

  it('Cerebras: the header names say the window (x-ratelimit-*-requests-day, x-ratelimit-*-tokens-minute)', async () => {
    limits = {
      'x-ratelimit-limit-requests-day': '14400',
      'x-ratelimit-limit-tokens-minute': '60000',
      'x-ratelimit-remaining-requests-day': '14399',
      'x-ratelimit-remaining-tokens-minute': '59990',
      'x-ratelimit-reset-requests-day': '33011.382867097855',
      'x-ratelimit-reset-tokens-minute': '11.382867097854614',
    }
    const r = await postJson(`${t.url}/cerebras/v1/chat/completions`, { model: 'llama3.1-8b', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer csk-test-000000000001' })
    expect(r.status).toBe(200)
    expect(await windowsOf('cerebras')).toEqual({ 'requests-day': 1440, 'tokens-minute': 1 })
  })

  it('a -month window is the calendar month (UTC) that holds the reading: its minutes, 28 to 31 days of them', async () => {
    // It had no length (null), as if the vendor had not said it.
    limits = {
      'x-ratelimit-limit-tokens-month': '1000000000',
      'x-ratelimit-remaining-tokens-month': '999000000',
      'x-ratelimit-limit-tokens-minute': '500000',
      'x-ratelimit-remaining-tokens-minute': '499000',
    }
    const before = Date.now()
    const r = await postJson(`${t.url}/cerebras/v1/chat/completions`, { model: 'llama3.1-8b', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer csk-test-000000000002' })
    const after = Date.now()
    expect(r.status).toBe(200)
    const monthOf = (ts: number) => {
      const d = new Date(ts)
      return (Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)) / 60_000
    }
    const got = (await windowsOf('cerebras'))['tokens-month']
    expect([monthOf(before), monthOf(after)]).toContain(got)
    const at = (iso: string) => readKeyLimits(limits, Date.parse(iso))!.windows.find((w) => w.name === 'tokens-month')!.window_minutes
    expect(at('2026-02-14T12:00:00Z')).toBe(28 * 1440)
    expect(at('2028-02-29T23:59:59.999Z')).toBe(29 * 1440)
    expect(at('2026-04-01T00:00:00Z')).toBe(30 * 1440)
    expect(at('2026-12-31T23:59:59Z')).toBe(31 * 1440)
  })

  it("OpenAI: its headers do not say the window's length, so none is claimed; Anthropic's limits are per minute", async () => {
    limits = {
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': '499',
      'x-ratelimit-reset-requests': '120ms',
      'x-ratelimit-limit-tokens': '200000',
      'x-ratelimit-remaining-tokens': '199000',
      'x-ratelimit-reset-tokens': '6m0s',
    }
    await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-proj-key-000000000001' })
    expect(await windowsOf('openai')).toEqual({ requests: null, tokens: null })
    limits = {
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '49',
      'anthropic-ratelimit-requests-reset': new Date(Date.now() + 60_000).toISOString(),
      'anthropic-ratelimit-input-tokens-limit': '30000',
      'anthropic-ratelimit-input-tokens-remaining': '29000',
    }
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'sk-ant-api03-key-000000000001', 'anthropic-version': '2023-06-01' })
    expect(r.status).toBe(200)
    expect(await windowsOf('anthropic')).toEqual({ requests: 1, 'input-tokens': 1 })
  })
})
