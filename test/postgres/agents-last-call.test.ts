import { beforeAll, describe, expect, it } from 'vitest'
import { SHARED_REFRESH_MS } from '../../src/main/connect/last-seen'
import { NANO_FIXTURE, replayJson } from '../budgets/support'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The agents list's `last_call_at` on instances sharing one PostgreSQL (README: Connecting agents):
 * an agent's calls through any instance, not only those stored before this instance first read them.
 */

const TOKEN = 'admin-token-for-pg-agents-0123456789'
const h = usePostgres()
beforeAll(() => replayJson(h.upstream, NANO_FIXTURE))

const server = (url: string) => h.server({ url, config: { admin: { enabled: true, token: TOKEN } } })
const lastCall = async (t: TestServer, agent: string): Promise<string | null> => {
  const agents = (await request(`${t.url}/api/admin/agents`, { headers: { authorization: `Bearer ${TOKEN}` } })).json().agents
  return agents.find((x: any) => x.agent === agent)?.last_call_at ?? null
}
const call = (t: TestServer) =>
  postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-pg-agents-0001', 'x-burnrate-agent': 'codex' })

describe('last_call_at on PostgreSQL', () => {
  it("shows another instance's call made after this instance first read the agents' calls", async () => {
    const url = h.database()
    const a = await server(url)
    const b = await server(url)
    expect((await call(a)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const first = (await eventually(async () => (await lastCall(b, 'codex')) ?? undefined, 15_000)) as string
    // B has read the agents' calls; A makes another one later.
    expect((await call(a)).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const stored = (await h.store(url).get<{ ts: number }>("SELECT max(ts) AS ts FROM calls WHERE agent = 'codex'"))!.ts
    expect(new Date(Number(stored)).toISOString() > first).toBe(true)
    // Within SHARED_REFRESH_MS of the last read, B's next answer has it.
    await eventually(async () => (await lastCall(b, 'codex')) === new Date(Number(stored)).toISOString(), SHARED_REFRESH_MS * 4)
  }, 60_000)
})
