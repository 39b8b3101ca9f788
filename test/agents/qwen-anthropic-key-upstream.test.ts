import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'
import { startConnectProxy } from '../network/support'

/**
 * Qwen Code's Anthropic provider sends its API key to Burnrate as `Authorization: Bearer
 * sk-ant-api…` with no `x-api-key` (test/agents/qwen-anthropic-bearer.test.ts), and Anthropic's
 * API takes an API key only in `x-api-key` (its docs; a key sent as a Bearer token is answered
 * 401 "Invalid bearer token"). Bound for Anthropic's own API the key goes upstream as
 * `x-api-key`. Here the `anthropic` provider's base URL names api.anthropic.com itself, a name only
 * the test's HTTP proxy (`upstream.proxy`) resolves, to the mock: nothing leaves the machine.
 */
const DIR = join(dirname(fileURLToPath(import.meta.url)), 'captures')
const capture = JSON.parse(readFileSync(join(DIR, 'qwen-code-anthropic.json'), 'utf8'))

let upstream: MockUpstream
let proxy: Awaited<ReturnType<typeof startConnectProxy>>
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
  proxy = await startConnectProxy(null, ['api.anthropic.com'])
  t = await startTestServer(
    {
      upstream: { proxy: proxy.url },
      providers: { anthropic: { base_url: `http://api.anthropic.com:${new URL(upstream.url).port}` } },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t?.cleanup()
  await proxy?.close()
  await upstream?.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

function send(headers: Record<string, string>) {
  const { authorization: _, ...rest } = capture.headers
  return request(t.url + capture.path, { method: 'POST', headers: { ...rest, ...headers }, body: JSON.stringify(capture.body) })
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

describe("an Anthropic API key sent as a Bearer token, bound for Anthropic's own API", () => {
  it("goes upstream as x-api-key, without the Authorization header; the call is recorded under that key as qwen-code's", async () => {
    const key = 'sk-ant-api03-qwen-upstream-0000000001'
    let status = 0
    const row = await recorded(t, async () => {
      status = (await send({ authorization: `Bearer ${key}` })).status
    })
    expect(status).toBe(200)
    expect(proxy.forwarded.at(-1)).toBe(`api.anthropic.com:${new URL(upstream.url).port}`)
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0].url).toBe('/v1/messages')
    expect(upstream.requests[0].headers['x-api-key']).toBe(key)
    expect(upstream.requests[0].headers.authorization).toBeUndefined()
    expect(row).toMatchObject({ provider: 'anthropic', agent: 'qwen-code', api_key_hash: sha256(key), key_hint: 'sk-…0001', billing: 'api' })
  })

  it('leaves an OAuth token (sk-ant-oat…), any other Bearer token, and a call that has its x-api-key as they came', async () => {
    const cases: Record<string, string>[] = [
      { authorization: 'Bearer sk-ant-oat01-qwen-upstream-0000000002' },
      { authorization: 'Bearer gw-token-0000000003' },
      { authorization: 'Bearer sk-ant-api03-qwen-upstream-0000000004', 'x-api-key': 'sk-ant-api03-qwen-upstream-0000000005' },
    ]
    for (const headers of cases) {
      upstream.requests.length = 0
      expect((await send(headers)).status).toBe(200)
      expect(upstream.requests).toHaveLength(1)
      expect(upstream.requests[0].headers.authorization).toBe(headers.authorization)
      expect(upstream.requests[0].headers['x-api-key']).toBe(headers['x-api-key'])
    }
  })
})

describe('the same call to another Anthropic base URL (a gateway that may want the Bearer)', () => {
  it('goes upstream as it came', async () => {
    // The DeepSeek provider's Anthropic-compatible API, and test/agents/qwen-anthropic-bearer.test.ts
    // the `anthropic` provider at another address: neither is Anthropic's own API.
    const key = 'sk-ant-api03-qwen-upstream-0000000006'
    const res = await request(`${t.url}/deepseek/anthropic/v1/messages`, {
      method: 'POST',
      headers: { ...capture.headers, authorization: `Bearer ${key}` },
      body: JSON.stringify(capture.body),
    })
    expect(res.status).toBe(200)
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0].headers.authorization).toBe(`Bearer ${key}`)
    expect(upstream.requests[0].headers['x-api-key']).toBeUndefined()
  })
})
