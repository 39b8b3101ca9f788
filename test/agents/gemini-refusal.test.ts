import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Gemini CLI refused by a budget: it retries a 429 10 times with backoff unless its body is a
 * Google quota error it takes as terminal (../../src/main/proxy/gemini-refusal.ts). A block
 * refusal meant for it must be that error, with the contract's fields beside Google's, recorded
 * as the 429 it is; a per-minute rate limit, and any other client, keep the contract's form.
 */
const DIR = join(dirname(fileURLToPath(import.meta.url)), 'captures')
const capture = JSON.parse(readFileSync(join(DIR, 'gemini-cli.json'), 'utf8'))

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
  t = await startTestServer(
    {
      budgets: {
        rules: [
          { api_key_pattern: 'AIzaSy-daily-*', daily_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'AIzaSy-session-*', session_limit_usd: 0, action: 'block' },
          { api_key_pattern: 'AIzaSy-rate-*', requests_per_minute: 1, action: 'block' },
        ],
      },
    },
    upstream.url,
  )
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function call(key: string, ua = capture.headers['user-agent']) {
  return request(t.url + capture.path, { method: 'POST', headers: { ...capture.headers, 'x-goog-api-key': key, 'user-agent': ua }, body: JSON.stringify(capture.body) })
}

const GOOGLE_QUOTA = { code: 429, status: 'RESOURCE_EXHAUSTED' }
const ERROR_INFO = { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'QUOTA_EXHAUSTED', domain: 'cloudcode-pa.googleapis.com' }

describe('Gemini CLI refused by a block rule', () => {
  it('a daily limit: 429, a Google quota error with its Retry-After as RetryInfo, the contract fields beside; recorded as gemini-cli 429', async () => {
    let reply: Awaited<ReturnType<typeof request>> | undefined
    const row = await recorded(t, async () => {
      reply = await call('AIzaSy-daily-gemini-cli-0000000001')
    })
    expect(reply!.status).toBe(429)
    expect(reply!.headers['x-should-retry']).toBe('false')
    const after = Number(reply!.headers['retry-after'])
    expect(after).toBeGreaterThan(0)
    const error = reply!.json().error
    expect(error).toMatchObject({ ...GOOGLE_QUOTA, type: 'budget_exceeded', api_key_pattern: 'AIzaSy-daily-*', period: 'daily', limit_usd: 0 })
    expect(error.message).toMatch(/budget rule "AIzaSy-daily-\*"/)
    expect(error.details).toEqual([expect.objectContaining(ERROR_INFO), { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${after}s` }])
    expect(row).toMatchObject({ agent: 'gemini-cli', status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(upstream.requests).toHaveLength(0)
  })

  it('a session cap (never resets, no Retry-After): the same error with no RetryInfo', async () => {
    const reply = await call('AIzaSy-session-gemini-cli-0000000002')
    expect(reply.status).toBe(429)
    expect(reply.headers['retry-after']).toBeUndefined()
    const error = reply.json().error
    expect(error).toMatchObject({ ...GOOGLE_QUOTA, type: 'budget_exceeded' })
    expect(error.details).toEqual([expect.objectContaining(ERROR_INFO)])
  })

  it('a per-minute rate limit keeps the contract form, to be retried', async () => {
    const key = 'AIzaSy-rate-gemini-cli-0000000003'
    await call(key)
    const reply = await call(key)
    expect(reply.status).toBe(429)
    expect(reply.headers['x-should-retry']).toBe('true')
    const error = reply.json().error
    expect(error.type).toBe('rate_limited')
    expect(error.details).toBeUndefined()
    expect(error.code).toBeUndefined()
  })

  it('another client keeps the contract form', async () => {
    const reply = await call('AIzaSy-daily-curl-0000000004', 'curl/8.5.0')
    expect(reply.status).toBe(429)
    const error = reply.json().error
    expect(error.type).toBe('budget_exceeded')
    expect(error.details).toBeUndefined()
    expect(error.code).toBeUndefined()
  })
})
