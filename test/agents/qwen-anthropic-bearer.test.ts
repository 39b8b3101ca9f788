import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Qwen Code's Anthropic provider (0.24.4) sends its API key to any Anthropic base URL but
 * *.anthropic.com, Burnrate's included, as `Authorization: Bearer <key>` and no `x-api-key` (its
 * anthropicContentGenerator passes the key as the Anthropic SDK's `authToken`). Replayed with the
 * headers it really sends (captures/qwen-code-anthropic.json): the call is recorded under that
 * key (its SHA-256 and hint) as an API-billed call of qwen-code, the header goes upstream as it
 * came to a base URL that is not Anthropic's own API (for that one, see
 * qwen-anthropic-key-upstream.test.ts), and a budget rule on the key refuses it (as the 403 Qwen
 * Code stops on).
 */
const DIR = join(dirname(fileURLToPath(import.meta.url)), 'captures')
const capture = JSON.parse(readFileSync(join(DIR, 'qwen-code-anthropic.json'), 'utf8'))

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-ant-api03-blocked-*', daily_limit_usd: 0, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})
beforeEach(() => {
  upstream.requests.length = 0
})

function send(key: string) {
  return request(t.url + capture.path, { method: 'POST', headers: { ...capture.headers, authorization: `Bearer ${key}` }, body: JSON.stringify(capture.body) })
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

describe("Qwen Code's Anthropic provider, its key as a Bearer token", () => {
  it('sends what the capture says: a Bearer key and no x-api-key', () => {
    expect(capture.headers.authorization).toMatch(/^Bearer sk-ant-api03-/)
    expect(Object.keys(capture.headers).map((h) => h.toLowerCase())).not.toContain('x-api-key')
  })

  it('is recorded under that key, billed as an API call of qwen-code, and the header goes upstream unchanged', async () => {
    const key = 'sk-ant-api03-qwen-bearer-0000000001'
    let status = 0
    const row = await recorded(t, async () => {
      status = (await send(key)).status
    })
    expect(status).toBe(200)
    expect(row).toMatchObject({ provider: 'anthropic', agent: 'qwen-code', api_key_hash: sha256(key), key_hint: 'sk-…0001', billing: 'api' })
    expect(upstream.requests).toHaveLength(1)
    expect(upstream.requests[0].headers.authorization).toBe(`Bearer ${key}`)
    expect(upstream.requests[0].headers['x-api-key']).toBeUndefined()
  })

  it('a budget rule on the key refuses it: a 403 Qwen Code stops on, recorded as the 429 it is, nothing sent upstream', async () => {
    const key = 'sk-ant-api03-blocked-qwen-0000000002'
    let reply: Awaited<ReturnType<typeof request>> | undefined
    const row = await recorded(t, async () => {
      reply = await send(key)
    })
    expect(reply!.status).toBe(403)
    expect(reply!.json().error).toMatchObject({ type: 'budget_exceeded', api_key_pattern: 'sk-ant-api03-blocked-*' })
    expect(row).toMatchObject({ status: 429, error: 'budget_exceeded', agent: 'qwen-code', api_key_hash: sha256(key), key_hint: 'sk-…0002', cost_usd: 0 })
    expect(upstream.requests).toHaveLength(0)
  })
})
