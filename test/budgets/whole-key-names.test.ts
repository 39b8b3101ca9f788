import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyHint } from '../../src/shared/key-hint'
import { type Reply, eventually } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, replayJson, spentToday } from './support'

// A rule on a whole key is named by the key's hint in what the agent is told (refusal body,
// warning headers): agents copy API error text into their transcripts and logs on disk.
const BLOCKED = 'sk-proj-blockedwholekey0000a1b2'
const WARNED = 'sk-proj-warnedwholekey00000c3d4'
const RATED = 'sk-proj-ratedwholekey000000e5f6'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(
    {
      timezone: 'UTC',
      budgets: {
        rules: [
          { api_key_pattern: BLOCKED, daily_limit_usd: NANO_COST * 0.75, action: 'block' },
          { api_key_pattern: WARNED, daily_limit_usd: NANO_COST * 0.75, action: 'warn' },
          { api_key_pattern: RATED, requests_per_minute: 1, action: 'block' },
          { api_key_pattern: 'sk-proj-*', daily_limit_usd: 100, action: 'block' },
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

function raw(r: Reply, key: string): boolean {
  return r.text.includes(key) || JSON.stringify(r.headers).includes(key)
}

describe('a budget rule on a whole key, as the agent is told it', () => {
  it('a block refusal names the rule by the key hint, never the raw key', async () => {
    expect((await chat(t, BLOCKED)).status).toBe(200)
    await eventually(() => spentToday(t, BLOCKED) > 0)
    const r = await chat(t, BLOCKED)
    expect(r.status).toBe(429)
    expect(raw(r, BLOCKED)).toBe(false)
    expect(r.json().error.api_key_pattern).toBe(keyHint(BLOCKED))
    expect(r.json().error.message).toContain(`budget rule "${keyHint(BLOCKED)}"`)
  })

  it('a warning header names the rule by the key hint, never the raw key', async () => {
    expect((await chat(t, WARNED)).status).toBe(200)
    await eventually(() => spentToday(t, WARNED) > 0)
    const r = await chat(t, WARNED)
    expect(r.status).toBe(200)
    expect(raw(r, WARNED)).toBe(false)
    expect(String(r.headers['x-burnrate-budget-warning'])).toMatch(new RegExp(`^${keyHint(WARNED).replace('\u2026', '\\.\\.\\.')} daily `))
  })

  it('a rate-limit refusal names the rule by the key hint, never the raw key', async () => {
    expect((await chat(t, RATED)).status).toBe(200)
    const r = await chat(t, RATED)
    expect(r.status).toBe(429)
    expect(raw(r, RATED)).toBe(false)
    expect(r.json().error).toMatchObject({ type: 'rate_limited', api_key_pattern: keyHint(RATED) })
    expect(r.json().error.message).toContain(`Budget rule "${keyHint(RATED)}"`)
  })

})
