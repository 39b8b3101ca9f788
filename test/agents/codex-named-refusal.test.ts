import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded } from '../providers/ledger'

/**
 * Codex under another name (the desktop app's `Codex Desktop`, a program embedding it with an
 * originator of its own) refused by a budget over HTTP (where it falls back when the WebSocket
 * fails): it must get the refusal in the form Codex stops on (`usage_limit_reached`), not the
 * contract's `budget_exceeded`, which Codex retries after its Retry-After, hours later. So must
 * Codex CLI named otherwise by `X-Burnrate-Agent` (its config's `http_headers`): the form is
 * for the client that sent the call, whatever name it is recorded under.
 */
const DIR = join(dirname(fileURLToPath(import.meta.url)), 'captures')
const capture = (f: string) => JSON.parse(readFileSync(join(DIR, f), 'utf8'))

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }))
  t = await startTestServer({ budgets: { rules: [{ api_key_pattern: 'sk-proj-capture-codex-*', daily_limit_usd: 0, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

describe('Codex under another name, refused by a budget over HTTP', () => {
  for (const file of ['codex-desktop.json', 'codex-embedded.json']) {
    it(`${file}: 429 typed usage_limit_reached, recorded as codex`, async () => {
      const c = capture(file)
      let reply: Awaited<ReturnType<typeof request>> | undefined
      const row = await recorded(t, async () => {
        reply = await request(t.url + c.path, { method: 'POST', headers: c.headers, body: JSON.stringify(c.body) })
      })
      expect(reply!.status).toBe(429)
      expect(reply!.json().error).toMatchObject({ type: 'usage_limit_reached', code: 'budget_exceeded' })
      expect(row).toMatchObject({ agent: 'codex', session: c.expect.session, status: 429 })
      expect(upstream.requests).toHaveLength(0)
    })
  }

  it('Codex CLI named by X-Burnrate-Agent: 429 typed usage_limit_reached, recorded under that name and its session', async () => {
    const c = capture('codex-subagent.json')
    let reply: Awaited<ReturnType<typeof request>> | undefined
    const row = await recorded(t, async () => {
      reply = await request(t.url + c.path, { method: 'POST', headers: { ...c.headers, 'x-burnrate-agent': 'nightly-refactor' }, body: JSON.stringify(c.body) })
    })
    expect(reply!.status).toBe(429)
    expect(reply!.json().error).toMatchObject({ type: 'usage_limit_reached', code: 'budget_exceeded' })
    expect(row).toMatchObject({ agent: 'nightly-refactor', session: c.expect.session, status: 429 })
  })

  it('another client named codex by X-Burnrate-Agent keeps the contract shape', async () => {
    const reply = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-proj-capture-codex-curl-0001', 'user-agent': 'curl/8.5.0', 'x-burnrate-agent': 'codex' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(reply.status).toBe(429)
    expect(reply.json().error).toMatchObject({ type: 'budget_exceeded' })
  })
})
