import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { serverOverMockUpstream } from '../support/server'
import { answer, recorded } from './ledger'

/**
 * Gemini CLI logged in with Google talks to Gemini Code Assist (`CODE_ASSIST_ENDPOINT`, pointed at
 * `<burnrate>/code-assist`): `POST /v1internal:streamGenerateContent?alt=sse` whose body wraps
 * Gemini's request (`request`, with the CLI's `session_id`) and whose answers wrap Gemini's
 * (`{response, traceId}`, gemini-cli's code_assist/converter.ts). The answers here are the real
 * Gemini recordings of ./gemini.test.ts, each wrapped that way.
 */

const s = serverOverMockUpstream()
beforeEach(() => {
  s.upstream.requests.length = 0
})

const LOGIN = {
  authorization: 'Bearer ya29.a0-google-login-access-token-0001',
  'user-agent': 'GeminiCLI-tui/0.61.0/gemini-2.5-pro (linux; x64; terminal) google-api-nodejs-client/10.9.0',
}
const SESSION = '5d1f0b6e-1c2a-4f7e-9b1e-0a7d3c2b1a00'
const BODY = {
  model: 'gemini-2.5-flash',
  project: 'burnrate-test-project',
  user_prompt_id: `${SESSION}########0`,
  request: { contents: [{ role: 'user', parts: [{ text: 'Count to 100' }] }], generationConfig: { temperature: 0 }, session_id: SESSION },
}

/** Gemini's answers of a recording (SSE events, or one JSON body), each wrapped as Code Assist sends it. */
function wrapped(file: string): string[] {
  const text = fixture(file).toString('utf8')
  const answers = file.endsWith('.sse')
    ? text
        .split(/\r?\n\r?\n/)
        .filter((e) => e.startsWith('data: '))
        .map((e) => e.slice('data: '.length))
    : [text]
  return answers.map((a) => JSON.stringify({ response: JSON.parse(a), traceId: 'trace-code-assist-0001' }))
}

function price(usage: Record<string, number>, model: string, ts: number): number {
  const p = calcPrice(usage, model, { providerId: 'google', timestamp: new Date(ts) })
  expect(p).not.toBeNull()
  return p!.total_price
}

describe('Gemini Code Assist (Gemini CLI logged in with Google)', () => {
  it('a streamed answer is metered from its last event, priced as Google’s model, recorded under the CLI and its own session as plan usage', async () => {
    const sse = `${wrapped('gemini/stream-generate-content.sse')
      .map((d) => `data: ${d}\r\n\r\n`)
      .join('')}`
    answer(s.upstream, sse, 'sse')
    let res: any
    const row = await recorded(s.t, async () => {
      res = await postJson(`${s.t.url}/code-assist/v1internal:streamGenerateContent?alt=sse`, BODY, LOGIN)
    })
    expect(res.status).toBe(200)
    expect(res.body.toString()).toBe(sse)
    expect(s.upstream.requests[0].url).toBe('/v1internal:streamGenerateContent?alt=sse')
    expect(s.upstream.requests[0].headers.authorization).toBe(LOGIN.authorization)
    expect(JSON.parse(s.upstream.requests[0].body.toString())).toEqual(BODY)
    expect(row).toMatchObject({
      provider: 'code-assist',
      endpoint: 'streamGenerateContent',
      model: 'gemini-2.5-flash',
      // the last event's cumulative usage (promptTokenCount 18, candidates 80 + thoughts 35)
      input_tokens: 18,
      output_tokens: 115,
      reasoning_tokens: 35,
      streamed: 1,
      estimated: 0,
      priced: 1,
      status: 200,
      agent: 'gemini-cli',
      session: SESSION,
      billing: 'subscription',
      // Gemini's own id of the answer
      response_id: 'ru1garvBEoOiqtsP2fznmQw',
    })
    expect(row.cost_usd).toBe(price({ input_tokens: 18, output_tokens: 115 }, 'gemini-2.5-flash', row.ts))
    expect(row.cost_usd).toBeGreaterThan(0)
    // Plan usage: its value is shown apart from money spent.
    const summary = (await request(`${s.t.url}/api/dashboard/summary`)).json()
    expect(summary.today_plan_value_usd).toBeGreaterThan(0)
  })

  it('a whole answer (generateContent) with cached tokens', async () => {
    const [body] = wrapped('gemini/generate-content-cached-thoughts.json')
    answer(s.upstream, body)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:generateContent`, BODY, LOGIN))
    expect(s.upstream.requests[0].url).toBe('/v1internal:generateContent')
    expect(row).toMatchObject({
      provider: 'code-assist',
      endpoint: 'generateContent',
      model: 'gemini-2.5-flash',
      input_tokens: 3520,
      cache_read_tokens: 3512,
      output_tokens: 44,
      reasoning_tokens: 42,
      streamed: 0,
      session: SESSION,
      billing: 'subscription',
    })
    expect(row.cost_usd).toBe(price({ input_tokens: 3520, cache_read_tokens: 3512, output_tokens: 44 }, 'gemini-2.5-flash', row.ts))
  })

  it("its quotas (retrieveUserQuota) are the plan's windows, one per model, on /api/dashboard/plans under the Google Cloud project", async () => {
    const reset = new Date(Date.now() + 6 * 3600_000).toISOString()
    const quota = {
      buckets: [
        { modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.2, remainingAmount: '20', resetTime: reset },
        { modelId: 'gemini-2.5-flash', tokenType: 'REQUESTS', remainingFraction: 0.9, resetTime: reset },
      ],
    }
    answer(s.upstream, quota)
    let res: any
    const row = await recorded(s.t, async () => {
      res = await postJson(`${s.t.url}/code-assist/v1internal:retrieveUserQuota`, { project: 'burnrate-test-project' }, LOGIN)
    })
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body.toString())).toEqual(quota)
    expect(row).toMatchObject({ provider: 'code-assist', endpoint: 'retrieveUserQuota', cost_usd: 0, billing: 'subscription' })
    const accounts = (await request(`${s.t.url}/api/dashboard/plans`)).json().accounts as any[]
    const acct = accounts.find((a) => a.provider === 'code-assist')
    expect(acct).toMatchObject({ billing: 'subscription', account_hint: 'bur…ject', details: { 'gemini-2.5-pro-remaining': '20' } })
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.resets_at])).toEqual([
      ['gemini-2.5-pro', 0.8, reset],
      ['gemini-2.5-flash', expect.closeTo(0.1, 12), reset],
    ])
    // A new access token (Google's last an hour) is the same account: still one.
    answer(s.upstream, quota)
    await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:retrieveUserQuota`, { project: 'burnrate-test-project' }, { ...LOGIN, authorization: 'Bearer ya29.a0-refreshed-token-0002' }))
    const again = (await request(`${s.t.url}/api/dashboard/plans`)).json().accounts as any[]
    expect(again.filter((a) => a.provider === 'code-assist')).toHaveLength(1)
  })

  it('its other methods (loadCodeAssist, quotas) pass through and cost nothing', async () => {
    const tier = { currentTier: { id: 'free-tier' }, cloudaicompanionProject: 'burnrate-test-project' }
    answer(s.upstream, tier)
    let res: any
    const row = await recorded(s.t, async () => {
      res = await postJson(`${s.t.url}/code-assist/v1internal:loadCodeAssist`, { metadata: { pluginType: 'GEMINI' } }, LOGIN)
    })
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body.toString())).toEqual(tier)
    expect(s.upstream.requests[0].url).toBe('/v1internal:loadCodeAssist')
    expect(row).toMatchObject({ provider: 'code-assist', endpoint: 'loadCodeAssist', input_tokens: 0, output_tokens: 0, cost_usd: 0, agent: 'gemini-cli', billing: 'subscription' })
  })
})
