import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerSpend } from '../../src/main/desktop-logic/spend-source'
import { PlanNoticeLog, planNotice } from '../../src/main/desktop-logic/tray-plans'
import { TrayPresenter } from '../../src/main/desktop-logic/tray-presenter'
import type { TrayView } from '../../src/main/desktop-logic/tray-view'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, type RecordedRequest, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

const soon = (ms: number) => String(Math.floor((Date.now() + ms) / 1000))

/** The header sets a mock upstream sends, by which credential asked. */
let meterHeaders: (req: RecordedRequest) => Record<string, string> = () => ({})

describe('plan windows from the vendor meter, and subscription calls apart from spend', () => {
  let upstream: MockUpstream
  let t: TestServer
  let presenter: TrayPresenter
  let view: TrayView | null = null

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => {
      const extra = meterHeaders(req)
      if (req.url.includes('/messages')) {
        return { status: 200, headers: { 'content-type': 'application/json', ...extra }, body: fixture('anthropic/messages-nonstream-basic.json') }
      }
      if (req.url.endsWith('/responses')) {
        return { status: 200, headers: { 'content-type': 'text/event-stream', ...extra }, body: fixture('openai-responses/responses-stream-basic.sse') }
      }
      return { status: 200, headers: { 'content-type': 'application/json', ...extra }, body: fixture('openai-chat/chat-nonstream-cached.json') }
    })
    t = await startTestServer({ ...ADMIN_CONFIG, metrics: { enabled: true } }, upstream.url)
    presenter = new TrayPresenter({
      spend: ledgerSpend(t.server.ledger),
      budgets: null,
      plans: t.server.context.plans,
      platform: 'darwin',
      intervalMs: 10,
      render: (v) => {
        view = v
      },
    })
    presenter.start()
  })
  afterAll(async () => {
    presenter.stop()
    await t.cleanup()
    await upstream.close()
  })

  const plans = async () => (await request(`${t.url}/api/dashboard/plans`)).json().accounts as any[]

  it('Claude Code on a Claude plan: unified windows move /api/dashboard/plans and the tray; the call is a subscription call, not spend', async () => {
    meterHeaders = () => ({
      'anthropic-ratelimit-unified-status': 'allowed',
      'anthropic-ratelimit-unified-representative-claim': 'five_hour',
      'anthropic-ratelimit-unified-5h-utilization': '0.43',
      'anthropic-ratelimit-unified-5h-reset': soon(3 * 3600_000),
      'anthropic-ratelimit-unified-5h-status': 'allowed',
      'anthropic-ratelimit-unified-7d-utilization': '0.12',
      'anthropic-ratelimit-unified-7d-reset': soon(4 * 86_400_000),
      'anthropic-ratelimit-unified-7d_opus-utilization': '0.05',
    })
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, {
      authorization: 'Bearer sk-ant-oat01-plan-token-aaaaaaaaaaaaaaaa',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'oauth-2025-04-20',
    })
    expect(r.status).toBe(200)
    // The vendor's headers reach the client untouched.
    expect(r.headers['anthropic-ratelimit-unified-5h-utilization']).toBe('0.43')
    const accounts = await plans()
    expect(accounts).toHaveLength(1)
    expect(accounts[0]).toMatchObject({ provider: 'anthropic', account_hint: 'sk-…aaaa', billing: 'subscription' })
    expect(accounts[0].windows.map((w: any) => [w.name, w.utilization])).toEqual([['5h', 0.43], ['7d', 0.12], ['7d_opus', 0.05]])
    expect(accounts[0].details).toMatchObject({ status: 'allowed', 'representative-claim': 'five_hour' })
    await expect.poll(() => view?.tooltip ?? '', { timeout: 10_000 }).toMatch(/5h 43% · resets (?:[A-Z][a-z]{2} )?\d\d:\d\d/) // a reset after midnight names its day
    expect(view!.title).toBe('$0.00 · 5h 43%')

    // Money and API-equivalent value apart: summary, export, per-key spend.
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBe(0)
    expect(summary.today_plan_value_usd).toBeGreaterThan(0)
    const calls = (await request(`${t.url}/api/dashboard/export?format=json`)).json().calls
    expect(calls[0]).toMatchObject({ billing: 'subscription', priced: true })
    expect(calls[0].cost_usd).toBeCloseTo(summary.today_plan_value_usd, 12)
    const csv = (await request(`${t.url}/api/dashboard/export?format=csv`)).text
    expect(csv.split('\n')[1]).toContain(',subscription,')
    const keys = (await admin(t.url, 'GET', '/api-keys')).json() as { spend_today_usd: number }[]
    expect(keys[0].spend_today_usd).toBe(0)
    const costs = (await request(`${t.url}/api/dashboard/costs?group_by=model`)).json()
    expect(costs.rows[0].cost_usd).toBe(0)
  })

  it('a later reading moves the window and its pace', async () => {
    meterHeaders = () => ({
      'anthropic-ratelimit-unified-5h-utilization': '0.86',
      'anthropic-ratelimit-unified-5h-reset': soon(3 * 3600_000),
    })
    await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, {
      authorization: 'Bearer sk-ant-oat01-plan-token-aaaaaaaaaaaaaaaa',
      'anthropic-version': '2023-06-01',
    })
    const w = (await plans())[0].windows.find((x: any) => x.name === '5h')
    expect(w.utilization).toBe(0.86)
    expect(w.projected_exhausted_at).not.toBeNull() // 43% -> 86% within seconds: out long before the reset
    await expect.poll(() => view?.title ?? '', { timeout: 10_000 }).toBe('$0.00 · 5h 86%')
  })

  it('the same windows are in /metrics, by provider, account hint and window', async () => {
    const text = (await request(`${t.url}/metrics`)).text
    const id = (await plans()).find((a) => a.account_hint === 'sk-…aaaa').account_id
    expect(id).toMatch(/^[0-9a-f]{16}$/)
    expect(text).toContain(`burnrate_plan_utilization_ratio{provider="anthropic",account="sk-…aaaa",account_id="${id}",window="5h"} 0.86`)
    expect(text).toContain(`burnrate_plan_utilization_ratio{provider="anthropic",account="sk-…aaaa",account_id="${id}",window="7d"} 0.12`)
    expect(text).not.toContain('plan-token-aaaa')
  })

  it('an API key: per-key limits are kept, the call is money', async () => {
    meterHeaders = () => ({
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': '450',
      'x-ratelimit-reset-requests': '12s',
      'x-ratelimit-limit-tokens': '200000',
      'x-ratelimit-remaining-tokens': '150000',
    })
    const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-proj-money-key-bbbbbbbb' })
    expect(r.status).toBe(200)
    const acct = (await plans()).find((a) => a.provider === 'openai')
    expect(acct).toMatchObject({ billing: 'api', account_hint: 'sk-…bbbb' })
    expect(acct.windows.map((w: any) => [w.name, w.utilization])).toEqual([['requests', 0.1], ['tokens', 0.25]])
    const summary = (await request(`${t.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBeGreaterThan(0)
    // The plan's window still leads the tray: a key's rate limit is not a plan.
    await expect.poll(() => view?.title ?? '', { timeout: 10_000 }).not.toBe('$0.00 · 5h 86%')
    expect(view!.title).toMatch(/\$0\.01 · 5h 86%$/)
  })

  it('Codex logged in with ChatGPT: /chatgpt reaches the ChatGPT backend, x-codex windows are read, the call is a subscription call', async () => {
    meterHeaders = () => ({
      'x-codex-primary-used-percent': '97',
      'x-codex-primary-window-minutes': '300',
      'x-codex-primary-reset-at': soon(2 * 3600_000),
      'x-codex-secondary-used-percent': '40',
      'x-codex-secondary-window-minutes': '10080',
      'x-codex-secondary-reset-at': soon(3 * 86_400_000),
      'x-codex-credits-has-credits': 'false',
      'x-codex-credits-unlimited': 'false',
    })
    const before = upstream.requests.length
    const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, {
      authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.cccc',
      'chatgpt-account-id': 'acct_123',
      originator: 'codex_cli_rs',
    })
    expect(r.status).toBe(200)
    expect(upstream.requests[before].url).toBe('/backend-api/codex/responses')
    const acct = (await plans()).find((a) => a.provider === 'chatgpt')
    expect(acct).toMatchObject({ billing: 'subscription' })
    expect(acct.windows.map((w: any) => [w.name, w.utilization])).toEqual([['5h', 0.97], ['7d', 0.4]])
    expect(acct.details).toMatchObject({ 'codex-credits-has-credits': 'false' })
    await t.server.ledger.flush()
    const last = t.server.db.prepare('SELECT provider, model, billing, input_tokens, cost_usd, priced FROM calls ORDER BY id DESC LIMIT 1').get() as any
    expect(last).toMatchObject({ provider: 'chatgpt', billing: 'subscription', input_tokens: 278, priced: 1 })
    expect(last.cost_usd).toBeGreaterThan(0)
    // The fullest plan window now leads the tray.
    await expect.poll(() => view?.tooltip ?? '', { timeout: 10_000 }).toMatch(/5h 97%/)
  })

  it('Codex on a plan of one window: the empty second slot the ChatGPT backend sends (0%, 0 minutes, no reset) is no window, as Codex reads it', async () => {
    // The headers as the ChatGPT backend sends them to a plan with a weekly window alone (codex-rs
    // rate_limits.rs parse_rate_limit_window: a slot at 0% with no length and no reset has no data).
    meterHeaders = () => ({
      'x-codex-plan-type': 'plus',
      'x-codex-active-limit': 'premium',
      'x-codex-primary-used-percent': '4',
      'x-codex-primary-window-minutes': '10080',
      'x-codex-primary-reset-after-seconds': '550037',
      'x-codex-primary-reset-at': soon(550_037_000),
      'x-codex-secondary-used-percent': '0',
      'x-codex-secondary-window-minutes': '0',
      'x-codex-secondary-reset-at': '',
      'x-codex-credits-has-credits': 'False',
      'x-codex-credits-balance': '',
      'x-codex-credits-unlimited': 'False',
    })
    const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, {
      authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.wkly',
      'chatgpt-account-id': 'acct_weekly_only',
    })
    expect(r.status).toBe(200)
    const acct = (await plans()).find((a) => a.provider === 'chatgpt' && a.account_hint.endsWith('wkly'))
    expect(acct.windows.map((w: any) => [w.name, w.utilization, w.window_minutes])).toEqual([['7d', 0.04, 10080]])
    const metrics = (await request(`${t.url}/metrics`)).text
    expect(metrics.split('\n').filter((l) => l.startsWith('burnrate_plan_utilization_ratio{') && l.includes('wkly'))).toHaveLength(1)
  })

  it('Codex calls a second apart in one 5-hour window, each saying how many seconds are left until its reset, notify once', async () => {
    const log = new PlanNoticeLog()
    const notified: string[] = []
    const off = t.server.context.plans!.onAlert((a) => {
      if (log.claim(a)) notified.push(planNotice(a).title)
    })
    let left = 7200
    // reset-after-seconds: the reset is now + what is left, so every call's reset differs by some ms.
    meterHeaders = () => ({ 'x-codex-primary-used-percent': '85', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-after-seconds': String(left--) })
    try {
      for (let i = 0; i < 3; i++) {
        const r = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, {
          authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.eeee',
          'chatgpt-account-id': 'acct_reset_after',
        })
        expect(r.status).toBe(200)
      }
    } finally {
      off()
    }
    expect(notified).toEqual(['ChatGPT plan: 5h window at 85%'])
  })

  it("two members of one ChatGPT Team workspace (one chatgpt-account-id) keep their own windows: each token's user", async () => {
    // As ChatGPT's access tokens are: a JWT whose payload names the workspace and the member in it.
    const jwt = (user: string, tail: string) =>
      `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify({ 'https://api.openai.com/auth': { chatgpt_account_id: 'ws_team', chatgpt_account_user_id: `${user}__ws_team`, chatgpt_user_id: user } })).toString('base64url')}.sig${tail}`
    const call = (token: string) =>
      postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, { authorization: `Bearer ${token}`, 'chatgpt-account-id': 'ws_team' })
    const reset = soon(2 * 3600_000)
    meterHeaders = () => ({ 'x-codex-primary-used-percent': '12', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': reset })
    expect((await call(jwt('user-alice', '1111'))).status).toBe(200)
    meterHeaders = () => ({ 'x-codex-primary-used-percent': '91', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': reset })
    expect((await call(jwt('user-bob', '2222'))).status).toBe(200)
    const team = (await plans()).filter((a) => a.provider === 'chatgpt' && /…(1111|2222)$/.test(a.account_hint))
    expect(team.map((a) => [a.account_hint, a.windows[0].utilization]).sort()).toEqual([['eyJ…1111', 0.12], ['eyJ…2222', 0.91]])
  })

  it('Codex logged in with ChatGPT and pointed at /v1 (as for an API key, what `burnrate connect codex` sets): its calls go to the ChatGPT backend, not to OpenAI with a token OpenAI refuses', async () => {
    meterHeaders = () => ({})
    const login = { authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.dddd', 'chatgpt-account-id': 'acct_v1', originator: 'codex_exec' }
    const before = upstream.requests.length
    for (const path of ['/v1/responses', '/openai/v1/responses']) {
      const r = await postJson(`${t.url}${path}`, { model: 'gpt-4o', stream: true, input: 'hi' }, login)
      expect(r.status, path).toBe(200)
    }
    const models = await request(`${t.url}/v1/models?client_version=0.171.0`, { headers: login })
    expect(models.status).toBe(200)
    expect(upstream.requests.slice(before).map((q) => q.url)).toEqual([
      '/backend-api/codex/responses',
      '/backend-api/codex/responses',
      '/backend-api/codex/models?client_version=0.171.0',
    ])
    expect(upstream.requests[before].headers.authorization).toBe(login.authorization)
    expect(upstream.requests[before].headers['chatgpt-account-id']).toBe('acct_v1')
    await t.server.ledger.flush()
    const rows = t.server.db.prepare('SELECT provider, endpoint, billing, input_tokens FROM calls ORDER BY id DESC LIMIT 3').all() as any[]
    expect(rows.map((r) => r.provider)).toEqual(['chatgpt', 'chatgpt', 'chatgpt'])
    expect(rows.slice(1)).toEqual([
      { provider: 'chatgpt', endpoint: 'responses', billing: 'subscription', input_tokens: 278 },
      { provider: 'chatgpt', endpoint: 'responses', billing: 'subscription', input_tokens: 278 },
    ])
    // An API key's call on the same path still goes to OpenAI's API, as money.
    const apiKey = await postJson(`${t.url}/v1/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, { authorization: 'Bearer sk-proj-codex-api-key-0000' })
    expect(apiKey.status).toBe(200)
    expect(upstream.requests.at(-1)!.url).toBe('/v1/responses')
    await t.server.ledger.flush()
    expect(t.server.db.prepare('SELECT provider, billing FROM calls ORDER BY id DESC LIMIT 1').get()).toEqual({ provider: 'openai', billing: 'api' })
  })

  it('a Claude login whose token is refreshed stays one plan account (the account_uuid Claude Code sends), also for its calls that do not name it', async () => {
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.31', 'anthropic-ratelimit-unified-5h-reset': soon(2 * 3600_000) })
    const claude = (token: string, userId: string | null, path = '/v1/messages') =>
      postJson(`${t.url}${path}`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [], ...(userId === null ? {} : { metadata: { user_id: userId } }) }, {
        authorization: `Bearer ${token}`,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'oauth-2025-04-20',
        'user-agent': 'claude-cli/2.1.332 (external, cli)',
      })
    const account = '0b6e3d3c-1111-4222-8333-944445555666'
    const userId = (session: string) => JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: account, session_id: session })
    const claudeAccounts = async () => (await plans()).filter((a) => a.provider === 'anthropic' && a.account_hint !== 'sk-…aaaa')
    // Before and after a refresh: two tokens, one account (as Claude Code 2.1.78+ writes user_id, and as before it).
    expect((await claude('sk-ant-oat01-browser-login-before-1111', userId('11111111-2222-4333-8444-555555555555'))).status).toBe(200)
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.34', 'anthropic-ratelimit-unified-5h-reset': soon(2 * 3600_000) })
    expect((await claude('sk-ant-oat01-browser-login-after-2222', `user_${'e'.repeat(64)}_account_${account}_session_11111111-2222-4333-8444-555555555555`)).status).toBe(200)
    // Token counting sends no metadata: the refreshed token is known to belong to the account.
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.35', 'anthropic-ratelimit-unified-5h-reset': soon(2 * 3600_000) })
    expect((await claude('sk-ant-oat01-browser-login-after-2222', null, '/v1/messages/count_tokens')).status).toBe(200)
    let accounts = await claudeAccounts()
    expect(accounts).toHaveLength(1)
    expect(accounts[0]).toMatchObject({ billing: 'subscription', account_hint: 'sk-…1111' })
    expect(accounts[0].windows).toMatchObject([{ name: '5h', utilization: 0.35 }])
    // Refreshed again, the new token's first call counts tokens (no metadata): filed under the
    // token until a call names the account, then the account's, not a second account left frozen.
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.40', 'anthropic-ratelimit-unified-5h-reset': soon(2 * 3600_000) })
    expect((await claude('sk-ant-oat01-browser-login-again-4444', null, '/v1/messages/count_tokens')).status).toBe(200)
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.41', 'anthropic-ratelimit-unified-5h-reset': soon(2 * 3600_000) })
    expect((await claude('sk-ant-oat01-browser-login-again-4444', userId('11111111-2222-4333-8444-555555555555'))).status).toBe(200)
    accounts = await claudeAccounts()
    expect(accounts.map((a) => [a.account_hint, a.windows[0].utilization])).toEqual([['sk-…1111', 0.41]])
    // A token given alone (CLAUDE_CODE_OAUTH_TOKEN: account_uuid '') is its own account, as before.
    expect((await claude('sk-ant-oat01-setup-token-alone-3333', JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: '22222222-2222-4333-8444-555555555555' }))).status).toBe(200)
    accounts = await claudeAccounts()
    expect(accounts.map((a) => a.account_hint).sort()).toEqual(['sk-…1111', 'sk-…3333'])
    // Each call is recorded under the token it sent: the ledger's key is the credential, as the contract says.
    await t.server.ledger.flush()
    const keys = t.server.db.prepare("SELECT DISTINCT key_hint FROM calls WHERE key_hint LIKE 'sk-…1111' OR key_hint LIKE 'sk-…2222'").all()
    expect(keys).toHaveLength(2)
  })

  it('a window whose reset passes with no call since shows a fresh period on /api/dashboard/plans and /metrics, not its old 100%', async () => {
    // A full 5-hour window that resets in about a second; then no call.
    meterHeaders = () => ({
      'anthropic-ratelimit-unified-5h-utilization': '1',
      'anthropic-ratelimit-unified-5h-reset': String(Math.ceil((Date.now() + 1000) / 1000)),
      'anthropic-ratelimit-unified-5h-status': 'rejected',
    })
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, {
      authorization: 'Bearer sk-ant-oat01-plan-token-resets-ffff',
      'anthropic-version': '2023-06-01',
    })
    expect(r.status).toBe(200)
    const window = async () => (await plans()).find((a) => a.account_hint === 'sk-…ffff').windows[0]
    await expect.poll(async () => (await window()).utilization, { timeout: 10_000 }).toBe(0)
    expect(await window()).toMatchObject({ name: '5h', status: '', projected_exhausted_at: null, projected_at_reset: null })
    const text = (await request(`${t.url}/metrics`)).text
    expect(text).toMatch(/burnrate_plan_utilization_ratio\{provider="anthropic",account="sk-…ffff",account_id="[0-9a-f]{16}",window="5h"\} 0\n/)
  })

  it("a Claude plan whose first answer carried only the key's rate limits lists its plan windows alone once they come", async () => {
    const call = () =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, {
        authorization: 'Bearer sk-ant-oat01-plan-token-keyfirst-gggg',
        'anthropic-version': '2023-06-01',
      })
    meterHeaders = () => ({
      'anthropic-ratelimit-tokens-limit': '1000',
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': new Date(Date.now() + 60_000).toISOString(),
    })
    expect((await call()).status).toBe(200)
    const names = async () => (await plans()).find((a) => a.account_hint === 'sk-…gggg').windows.map((w: any) => w.name)
    expect(await names()).toEqual(['tokens'])
    meterHeaders = () => ({ 'anthropic-ratelimit-unified-5h-utilization': '0.2', 'anthropic-ratelimit-unified-5h-reset': soon(3600_000) })
    expect((await call()).status).toBe(200)
    expect(await names()).toEqual(['5h'])
  })

  it('a reading past the whole window (Codex over 100%, Claude over 1) is shown as the contract says, utilization in 0..1, rejected', async () => {
    meterHeaders = () => ({
      'anthropic-ratelimit-unified-5h-utilization': '1.07',
      'anthropic-ratelimit-unified-5h-reset': soon(3600_000),
      'anthropic-ratelimit-unified-5h-status': 'rejected',
      'anthropic-ratelimit-unified-7d-utilization': '-0.01',
      'anthropic-ratelimit-unified-7d-reset': soon(86_400_000),
    })
    const r = await postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, {
      authorization: 'Bearer sk-ant-oat01-plan-token-over-hhhh',
      'anthropic-version': '2023-06-01',
    })
    expect(r.status).toBe(200)
    const claude = (await plans()).find((a) => a.account_hint === 'sk-…hhhh')
    expect(claude.windows.map((w: any) => [w.name, w.utilization, w.status])).toEqual([['5h', 1, 'rejected'], ['7d', 0, '']])
    meterHeaders = () => ({ 'x-codex-primary-used-percent': '112', 'x-codex-primary-window-minutes': '300', 'x-codex-primary-reset-at': soon(3600_000) })
    const c = await postJson(`${t.url}/chatgpt/codex/responses`, { model: 'gpt-4o', stream: true, input: 'hi' }, {
      authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.chatgpt-access-token.over.iiii',
      'chatgpt-account-id': 'acct_over',
      originator: 'codex_cli_rs',
    })
    expect(c.status).toBe(200)
    const codex = (await plans()).find((a) => a.account_hint === 'eyJ…iiii')
    expect(codex.windows.map((w: any) => [w.name, w.utilization, w.status])).toEqual([['5h', 1, 'rejected']])
    const text = (await request(`${t.url}/metrics`)).text
    expect(text).toContain(`burnrate_plan_utilization_ratio{provider="chatgpt",account="eyJ…iiii",account_id="${codex.account_id}",window="5h"} 1\n`)
  })
})

describe('money budgets and plan usage', () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-ant-*', daily_limit_usd: 0, action: 'block' }] } }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('a block rule on money does not stop calls on a plan, and still stops an API key it matches', async () => {
    const send = (key: string) =>
      postJson(`${t.url}/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }, { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' })
    expect((await send('sk-ant-oat01-plan-token-ffffffffffff')).status).toBe(200)
    expect((await send('sk-ant-api03-money-key-gggggggggggg')).status).toBe(429)
  })
})
