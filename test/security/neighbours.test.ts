import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { slackBody } from '../../src/main/alerts/payload'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * What a neighbour gets from Burnrate: a provider (or whoever reads its logs) must not get the
 * dashboard's session; a page or process that reads the health answer (it needs no token) must not
 * get the collector's credentials; a caller of the proxy must not write Slack markup into alerts.
 */
const TOKEN = 'dash-session-token-0123456789'
let up: MockUpstream
let t: TestServer
beforeAll(async () => {
  up = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }))
  t = await startTestServer(
    { dashboard: { token: TOKEN }, otel: { endpoint: 'http://otluser:S3cretOtelPassw0rd@127.0.0.1:9/otlp?api_key=OTEL-KEY-123456' } },
    up.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await up.close()
})

describe('neighbours', () => {
  it("a browser's request to a proxied path does not take its cookies (the dashboard's session) to the provider", async () => {
    const login = await request(`${t.url}/?token=${TOKEN}`)
    expect(login.status).toBe(303)
    const session = String(login.headers['set-cookie']).split(';')[0]
    // The user opens a relinked batch results_url in the browser: same origin as the dashboard.
    const r = await request(`${t.url}/v1/messages/batches/msgbatch_1/results`, {
      headers: { cookie: `${session}; other_app=1`, 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'x-api-key': 'sk-ant-user-key-0000000000' },
    })
    expect(r.status).toBe(200)
    const seen = up.requests.at(-1)!
    expect(seen.headers['x-api-key']).toBe('sk-ant-user-key-0000000000')
    expect(seen.headers.cookie).toBeUndefined()
  })

  it('GET /api/health (no token needed) names the collector without the credentials its URL carries', async () => {
    const r = await request(`${t.url}/api/health`)
    expect(r.status).toBe(200)
    expect(r.text).not.toMatch(/S3cretOtelPassw0rd|OTEL-KEY-123456|otluser/)
    expect(r.json().otel.endpoint).toBe('http://127.0.0.1:9/otlp')
  })

  it("Slack alerts show a caller's session, agent and model as text, never as Slack markup", () => {
    const session = '<!channel> <https://evil.example/login|Burnrate: sign in> & more'
    const { text } = slackBody({
      type: 'runaway.loop', session, agent: '<@U123>', model: 'gpt<5>', key_hint: 'sk-…0001', repeats: 5, usd_last_minute: 0, action: 'warn',
    } as any)
    expect(text).toContain('session &lt;!channel&gt; &lt;https://evil.example/login|Burnrate: sign in&gt; &amp; more (&lt;@U123&gt;, sk-…0001)')
    expect(text).toContain('gpt&lt;5&gt;')
    expect(text).not.toMatch(/<[!@h]/)
  })
})
