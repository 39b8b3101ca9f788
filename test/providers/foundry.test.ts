import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { anthropicStream, fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { serverOverMockUpstream, startTestServer } from '../support/server'
import { answer, libraryPrice, recorded } from './ledger'

/**
 * Claude Code on Microsoft Foundry (`CLAUDE_CODE_USE_FOUNDRY=1`, `ANTHROPIC_FOUNDRY_BASE_URL` =
 * `…/foundry/anthropic`) through a running Burnrate: Anthropic's Messages API at the resource's
 * `/anthropic/v1/messages`, with the recorded Anthropic answers. Anthropic's Foundry SDK (the one
 * Claude Code is built on) sends an API key as `x-api-key` and a Microsoft Entra ID token as
 * `Authorization: Bearer`; `providers.foundry.base_url` (the resource) is the mock.
 */

const s = serverOverMockUpstream({
  budgets: { rules: [{ api_key_pattern: 'foundry-blocked-*', daily_limit_usd: 0, action: 'block' }] },
})

const KEY = 'foundry-api-key-000000000000000001'
const ENTRA = 'Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.foundry-entra-test-token.0002'
/** As Claude Code sends its calls (test/agents/captures/claude-code-2.1.json). */
const CLAUDE_CODE = { 'user-agent': 'claude-cli/2.1.80 (external, cli)', 'x-app': 'cli', 'anthropic-version': '2023-06-01' }
const SESSION = '2f1e8c4a-5b7d-4e3f-9a1b-6c2d8e0f4a11'
const metadata = { user_id: JSON.stringify({ device_id: 'd'.repeat(64), account_uuid: '', session_id: SESSION }) }

describe('Claude on Microsoft Foundry', () => {
  it("a Claude Code call with an API key: the path below the resource and the key pass as they came, the answer is metered as Anthropic's and priced at its list", async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-write-and-read.json'))
    const before = s.upstream.requests.length
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/foundry/anthropic/v1/messages?beta=true`, { model: 'claude-sonnet-4-5', max_tokens: 1024, metadata, messages: [{ role: 'user', content: 'hi' }] }, { ...CLAUDE_CODE, 'x-api-key': KEY }),
    )
    const got = s.upstream.requests[before]
    expect(got.url).toBe('/anthropic/v1/messages?beta=true')
    expect(got.headers.host).toBe(new URL(s.upstream.url).host)
    expect(got.headers['x-api-key']).toBe(KEY)
    expect(got.headers['anthropic-version']).toBe('2023-06-01')
    expect(row).toMatchObject({ provider: 'foundry', endpoint: 'messages', model: 'claude-sonnet-4-5-20250929', agent: 'claude-code', session: SESSION, status: 200, key_hint: 'fou…0001' })
    expect(row).toMatchObject({ input_tokens: 3 + 418 + 1111, cache_write_tokens: 418, cache_write_1h_tokens: 0, cache_read_tokens: 1111, output_tokens: 33, priced: 1, estimated: 0 })
    expect(row.cost_usd).toBe(libraryPrice('anthropic', { input_tokens: 3 + 418 + 1111, cache_write_tokens: 418, cache_read_tokens: 1111, output_tokens: 33 }, 'claude-sonnet-4-5-20250929', row.ts))
    expect(row.api_key_hash).not.toContain(KEY)
  })

  it('a stream with an Entra ID token: 1-hour cache writes at 2x input, 5-minute ones at 1.25x, reads at 0.1x', async () => {
    const usage = { input_tokens: 10, cache_creation_input_tokens: 3_000, cache_read_input_tokens: 500, cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 }, output_tokens: 1 }
    answer(s.upstream, anthropicStream({ id: 'msg_foundry1h', model: 'claude-sonnet-4-5-20250929', usage }, 50, 'Cached.'), 'sse')
    const before = s.upstream.requests.length
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/foundry/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', stream: true, max_tokens: 100, metadata, messages: [] }, { ...CLAUDE_CODE, authorization: ENTRA }),
    )
    expect(s.upstream.requests[before].url).toBe('/anthropic/v1/messages')
    expect(s.upstream.requests[before].headers.authorization).toBe(ENTRA)
    expect(row).toMatchObject({ provider: 'foundry', model: 'claude-sonnet-4-5-20250929', agent: 'claude-code', session: SESSION, streamed: 1, estimated: 0, priced: 1 })
    expect(row).toMatchObject({ input_tokens: 3_510, cache_write_tokens: 3_000, cache_write_1h_tokens: 2_000, cache_read_tokens: 500, output_tokens: 50 })
    // Sonnet 4.5: $3 input, $3.75 5-minute write, $6 1-hour write, $0.30 read, $15 output per million.
    expect(row.cost_usd).toBeCloseTo((10 * 3 + 1_000 * 3.75 + 2_000 * 6 + 500 * 0.3 + 50 * 15) / 1e6, 15)
  })

  it("the recorded stream with a cache write, as Claude Code receives it", async () => {
    answer(s.upstream, fixture('anthropic/messages-stream-cache-write.sse'), 'sse')
    const row = await recorded(s.t, () =>
      postJson(`${s.t.url}/foundry/anthropic/v1/messages`, { model: 'claude-3-5-sonnet-20240620', stream: true, max_tokens: 1024, messages: [] }, { 'x-api-key': KEY }),
    )
    expect(row).toMatchObject({ provider: 'foundry', model: 'claude-3-5-sonnet-20240620', streamed: 1, input_tokens: 4 + 1165, cache_write_tokens: 1165, cache_read_tokens: 0, output_tokens: 201, estimated: 0, priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('anthropic', { input_tokens: 4 + 1165, cache_write_tokens: 1165, output_tokens: 201 }, 'claude-3-5-sonnet-20240620', row.ts))
  })

  it("a deployment named for no model: the call is priced as the model the answer names", async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-cache-write-and-read.json'))
    const row = await recorded(s.t, () => postJson(`${s.t.url}/foundry/anthropic/v1/messages`, { model: 'team-claude', max_tokens: 64, messages: [] }, { 'x-api-key': KEY }))
    expect(row).toMatchObject({ provider: 'foundry', requested_model: 'team-claude', model: 'claude-sonnet-4-5-20250929', priced: 1 })
    expect(row.cost_usd).toBe(libraryPrice('anthropic', { input_tokens: 3 + 418 + 1111, cache_write_tokens: 418, cache_read_tokens: 1111, output_tokens: 33 }, 'claude-sonnet-4-5-20250929', row.ts))
  })

  it('token counting is recorded at no cost', async () => {
    answer(s.upstream, { input_tokens: 42 })
    const before = s.upstream.requests.length
    const row = await recorded(s.t, () => postJson(`${s.t.url}/foundry/anthropic/v1/messages/count_tokens`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': KEY }))
    expect(s.upstream.requests[before].url).toBe('/anthropic/v1/messages/count_tokens')
    expect(row).toMatchObject({ provider: 'foundry', endpoint: 'count_tokens', cost_usd: 0, output_tokens: 0 })
  })

  it('a key a block rule holds at $0 is refused before anything goes upstream', async () => {
    answer(s.upstream, fixture('anthropic/messages-nonstream-basic.json'))
    const before = s.upstream.requests.length
    const res = await postJson(`${s.t.url}/foundry/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }, { ...CLAUDE_CODE, 'x-api-key': 'foundry-blocked-key-0000000000001' })
    expect(res.status).toBe(429)
    expect(s.upstream.requests.length).toBe(before)
  })

  it('a rule for every key of provider foundry (Entra ID tokens change hourly) refuses a new token, and no other provider\'s call', async () => {
    const t2 = await startTestServer({ budgets: { rules: [{ api_key_pattern: '*', provider: 'foundry', daily_limit_usd: 0, action: 'block' }] } }, s.upstream.url)
    try {
      answer(s.upstream, fixture('anthropic/messages-nonstream-basic.json'))
      const before = s.upstream.requests.length
      const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }
      expect((await postJson(`${t2.url}/foundry/anthropic/v1/messages`, body, { ...CLAUDE_CODE, authorization: 'Bearer eyJ.new-entra-token.0003' })).status).toBe(429)
      expect(s.upstream.requests.length).toBe(before)
      expect((await postJson(`${t2.url}/anthropic/v1/messages`, body, { ...CLAUDE_CODE, 'x-api-key': 'sk-ant-api03-other-0000000001' })).status).toBe(200)
    } finally {
      await t2.cleanup()
    }
  })

  it('neither the API key nor the Entra ID token is written to the data dir raw', async () => {
    await s.t.server.proxy.drain(2000)
    s.t.server.ledger.flush()
    const secrets = [KEY, ENTRA.slice('Bearer '.length)]
    for (const name of readdirSync(s.t.dir, { recursive: true, encoding: 'utf8' })) {
      let text: string
      try {
        text = readFileSync(join(s.t.dir, name)).toString('latin1')
      } catch {
        continue // a folder
      }
      for (const secret of secrets) expect(text.includes(secret), name).toBe(false)
    }
  })

  it('a base URL that already ends in /anthropic (the client\'s ANTHROPIC_FOUNDRY_BASE_URL pasted as it was) gets the same upstream path', async () => {
    const t2 = await startTestServer({ providers: { foundry: { base_url: `${s.upstream.url}/anthropic/` } } }, s.upstream.url)
    try {
      answer(s.upstream, fixture('anthropic/messages-nonstream-cache-write-and-read.json'))
      const before = s.upstream.requests.length
      const row = await recorded(t2, () => postJson(`${t2.url}/foundry/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [] }, { 'x-api-key': KEY }))
      expect(s.upstream.requests[before].url).toBe('/anthropic/v1/messages')
      expect(row).toMatchObject({ provider: 'foundry', endpoint: 'messages', model: 'claude-sonnet-4-5-20250929', input_tokens: 3 + 418 + 1111, output_tokens: 33, priced: 1 })
    } finally {
      await t2.cleanup()
    }
  })

  it('with no base URL configured: a 404 that names providers.foundry.base_url, and nothing leaves', async () => {
    const t2 = await startTestServer({})
    try {
      const res = await postJson(`${t2.url}/foundry/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': KEY })
      expect(res.status).toBe(404)
      expect(res.json().error.message).toContain('providers.foundry.base_url')
    } finally {
      await t2.cleanup()
    }
  })
})
