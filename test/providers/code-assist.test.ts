import { calcPrice } from '@pydantic/genai-prices'
import { beforeEach, describe, expect, it } from 'vitest'
import type { PlanAlert } from '../../src/main/plans/tracker'
import { PlanNoticeLog, planNotice } from '../../src/main/desktop-logic/tray-plans'
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

/**
 * Out of its daily quota, Code Assist refuses a model call with HTTP 429 and a google.rpc error
 * (gemini-cli's googleQuotaErrors.ts reads it): an ErrorInfo whose reason is QUOTA_EXHAUSTED names
 * the model (`metadata.model`) and a RetryInfo the wait until the quota resets; a per-minute limit
 * says RATE_LIMIT_EXCEEDED and clears in seconds. Bodies: ../fixtures/errors/code-assist-429-*.json.
 */
describe('Gemini Code Assist refusing a call for its quota (HTTP 429)', () => {
  const QUOTA_EXHAUSTED = fixture('errors/code-assist-429-quota-exhausted.json').toString('utf8')
  const RATE_LIMITED = fixture('errors/code-assist-429-rate-limit.json').toString('utf8')
  // The fixture's RetryInfo.retryDelay (9h22m20.9s).
  const RETRY_MS = 33_740_910

  function refuse(body: string): void {
    s.upstream.setResponder(() => ({ status: 429, headers: { 'content-type': 'application/json; charset=UTF-8' }, body }))
  }
  function quota(project: string, buckets: object[]): Promise<unknown> {
    answer(s.upstream, { buckets })
    return recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:retrieveUserQuota`, { project }, LOGIN))
  }
  /** The plan account of a project, by its hint (a part of the project's id). */
  async function account(hint: string): Promise<any> {
    const accounts = (await request(`${s.t.url}/api/dashboard/plans`)).json().accounts as any[]
    return accounts.find((a) => a.provider === 'code-assist' && a.account_hint === hint)
  }
  function alerts(): { seen: PlanAlert[]; notices: string[]; off: () => void } {
    const seen: PlanAlert[] = []
    const notices: string[] = []
    const log = new PlanNoticeLog()
    const off = s.t.server.context.plans!.onAlert((a) => {
      seen.push(a)
      if (log.claim(a)) notices.push(planNotice(a).title)
    })
    return { seen, notices, off }
  }

  it('QUOTA_EXHAUSTED marks the window of the model it names full (100%) until the reset its RetryInfo gives, tells of it as any full window, and is no spend', async () => {
    const project = 'quota-exhausted-project-0001'
    const reset = Date.now() + RETRY_MS
    // gemini-cli's last quota reading: 70% of gemini-3.5-flash used, the day resetting when the refusal will say.
    await quota(project, [
      { modelId: 'gemini-3.5-flash', tokenType: 'REQUESTS', remainingFraction: 0.3, resetTime: new Date(reset).toISOString() },
      { modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.5, resetTime: new Date(reset).toISOString() },
    ])
    const a = alerts()
    try {
      refuse(QUOTA_EXHAUSTED)
      let res: any
      const before = Date.now()
      const row = await recorded(s.t, async () => {
        res = await postJson(`${s.t.url}/code-assist/v1internal:generateContent`, { ...BODY, model: 'gemini-3.5-flash', project }, LOGIN)
      })
      const after = Date.now()
      // The refusal reaches gemini-cli as Code Assist sent it.
      expect(res.status).toBe(429)
      expect(res.body.toString()).toBe(QUOTA_EXHAUSTED)
      // A refused call ran no model: no tokens, nothing estimated, $0.
      expect(row).toMatchObject({ provider: 'code-assist', endpoint: 'generateContent', status: 429, input_tokens: 0, output_tokens: 0, estimated: 0, cost_usd: 0, billing: 'subscription' })
      const acct = await account('quo…0001')
      const flash = acct.windows.find((w: any) => w.name === 'gemini-3.5-flash')
      expect(flash).toMatchObject({ utilization: 1, status: 'rejected' })
      // now + RetryInfo.retryDelay, read when the answer came
      expect(Date.parse(flash.resets_at)).toBeGreaterThanOrEqual(before + RETRY_MS - 1000)
      expect(Date.parse(flash.resets_at)).toBeLessThanOrEqual(after + RETRY_MS + 1000)
      expect(acct.details['gemini-3.5-flash-remaining']).toBe('0')
      // The other model's window keeps its reading.
      expect(acct.windows.find((w: any) => w.name === 'gemini-2.5-pro')).toMatchObject({ utilization: 0.5 })
      // The same notices a full window read from the quota answer gives: 80% and 95% crossed, at 100%.
      expect(a.seen.map((x) => [x.window, x.threshold, x.utilization])).toEqual([
        ['gemini-3.5-flash', 0.8, 1],
        ['gemini-3.5-flash', 0.95, 1],
      ])
      expect(a.notices).toEqual(['Gemini Code Assist plan: gemini-3.5-flash window at 100%', 'Gemini Code Assist plan: gemini-3.5-flash window at 100%'])
      // gemini-cli trying again is refused again: the same period, told of once.
      await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:generateContent`, { ...BODY, model: 'gemini-3.5-flash', project }, LOGIN))
      expect(a.seen).toHaveLength(2)
    } finally {
      a.off()
    }
    // Money is untouched: the summary's spend counts nothing for it.
    const summary = (await request(`${s.t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(0)
  })

  it('on a streamed call ([{error}], as :streamGenerateContent answers) with no quota read before, the window it names is full; without a reset in the body it keeps the one it knows', async () => {
    const project = 'quota-exhausted-project-0002'
    refuse(`[${QUOTA_EXHAUSTED}]`)
    const row = await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:streamGenerateContent?alt=sse`, { ...BODY, model: 'gemini-2.5-flash', project }, LOGIN))
    expect(row).toMatchObject({ endpoint: 'streamGenerateContent', status: 429, input_tokens: 0, output_tokens: 0, estimated: 0, cost_usd: 0 })
    // The quota Code Assist names (metadata.model), not the model asked for.
    let acct = await account('quo…0002')
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.status])).toEqual([['gemini-3.5-flash', 1, 'rejected']])

    // A refusal that says no reset (no RetryInfo, no reset in its metadata) of a window whose reset is known.
    const other = 'quota-exhausted-project-0003'
    const known = new Date(Date.now() + 5 * 3600_000).toISOString()
    await quota(other, [{ modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.4, resetTime: known }])
    const bare = JSON.parse(QUOTA_EXHAUSTED)
    bare.error.details = [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'QUOTA_EXHAUSTED', domain: 'cloudcode-pa.googleapis.com', metadata: { uiMessage: 'true' } }]
    refuse(JSON.stringify(bare))
    await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:generateContent`, { ...BODY, model: 'gemini-2.5-pro', project: other }, LOGIN))
    acct = await account('quo…0003')
    // No model in its metadata: the model the call asked for.
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.resets_at])).toEqual([['gemini-2.5-pro', 1, known]])
  })

  it('a per-minute limit (RATE_LIMIT_EXCEEDED), or a 429 that names no used-up quota, leaves the day’s window at its last reading and tells nothing', async () => {
    const project = 'rate-limited-project-0004'
    const reset = new Date(Date.now() + 6 * 3600_000).toISOString()
    await quota(project, [{ modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.6, resetTime: reset }])
    const a = alerts()
    try {
      // The last: a 429 with no details at all, as gemini-cli#1906 quotes one.
      for (const body of [RATE_LIMITED, `[${RATE_LIMITED}]`, '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}']) {
        refuse(body)
        const row = await recorded(s.t, () => postJson(`${s.t.url}/code-assist/v1internal:generateContent`, { ...BODY, model: 'gemini-2.5-pro', project }, LOGIN))
        expect(row).toMatchObject({ status: 429, input_tokens: 0, output_tokens: 0, estimated: 0, cost_usd: 0 })
      }
    } finally {
      a.off()
    }
    const acct = await account('rat…0004')
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.resets_at, w.status])).toEqual([['gemini-2.5-pro', 0.4, reset, '']])
    expect(a.seen).toEqual([])
  })
})
