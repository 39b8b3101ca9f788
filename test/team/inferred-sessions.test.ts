import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { chat, NANO_FIXTURE, replayJson } from '../budgets/support'
import { postJson } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A team server that proxies calls too infers sessions for its own calls that name none (one per
 * agent and key, `auto-…`), and reopens the ones still open at a restart from its ledger. A
 * member's call (ingested) was made in a session of the member's Burnrate, on another machine:
 * builds before this one reopened it, and the team server's next own call with the same key (a
 * team's shared key) joined the member's session, two machines' calls shown as one session.
 */
const TOKEN = 'team-token-alice-7f3c9a1e5b'
const KEY = 'sk-proj-shared-key-0000abcd'
const MEMBER_SESSION = 'auto-0123456789ab'

let upstream: MockUpstream
let team: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  team = await startTestServer({ timezone: 'UTC', team: { members: [{ name: 'alice', token: TOKEN }] } }, upstream.url)
})
afterAll(async () => {
  await team?.cleanup()
  await upstream.close()
})

describe("a team server's inferred sessions", () => {
  it("never reopen a member's session after a restart", async () => {
    // What the proxy records for a call with no agent or session headers: the same agent and session as ours below.
    expect((await chat(team, KEY)).status).toBe(200)
    await team.server.ledger.flush()
    const own = ledgerRows(team.dbFile)[0]
    expect(own.session).toMatch(/^auto-/)
    const call = {
      id: 1, t: new Date(Math.max(Date.now(), own.ts + 1)).toISOString(), provider: 'openai', model: 'gpt-5-nano', api_key_hash: hashKey(KEY),
      key_hint: 'sk-…abcd', tenant: '', agent: own.agent, session: MEMBER_SESSION, status: 200, streamed: false, input_tokens: 11,
      output_tokens: 228, cache_read_tokens: 0, cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.5, priced: true,
      estimated: false, latency_ms: 100,
    }
    expect((await postJson(`${team.url}/api/ingest`, { calls: [call] }, { authorization: `Bearer ${TOKEN}` })).json()).toMatchObject({ accepted: 1 })
    team = await team.restart()
    expect((await chat(team, KEY)).status).toBe(200)
    await team.server.ledger.flush()
    const mine = ledgerRows(team.dbFile).filter((r: any) => r.origin_id === null)
    expect(mine).toHaveLength(2)
    // Its own session, reopened: the member's, though later, is not this server's.
    expect(mine[1].session).toBe(own.session)
  })
})
