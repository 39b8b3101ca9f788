import { describe, expect, it } from 'vitest'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'
import { getJson, makeCall } from './seed'

/**
 * `active_sessions` counts sessions, not session rollup rows: a session id that two agents carry
 * (Claude Code's sub-agent calls attributed to another agent name, two agents sent the same
 * `X-Burnrate-Session`) or two tenants carry is one session, as in `costs?group_by=session`.
 * `/sessions` keeps its row per agent and tenant. The same on a SQLite ledger and on PostgreSQL.
 */

const h = usePostgres({ upstream: false })

async function seeded(t: TestServer): Promise<void> {
  const now = Date.now()
  const call = (over: Parameters<typeof makeCall>[0]) => t.server.ledger.record(makeCall({ ts: now - 60_000, ...over }))
  // One session, three agents and two tenants.
  call({ session: 'shared', agent: 'claude-code', tenant: 'acme' })
  call({ session: 'shared', agent: 'claude-code-subagent', tenant: 'acme' })
  call({ session: 'shared', agent: 'codex', tenant: 'globex' })
  // Another session of acme, and one idle for 10 minutes (not active).
  call({ session: 'solo', agent: 'aider', tenant: 'acme' })
  call({ session: 'idle', agent: 'aider', tenant: 'acme', ts: now - 600_000 })
  expect(await t.server.ledger.flushed()).toBe(true)
}

const api = async (t: TestServer, path: string) => {
  const { status, body } = await getJson(`${t.url}/api/dashboard/${path}`)
  expect(status).toBe(200)
  return body
}

describe('active_sessions counts each session once', () => {
  for (const store of ['SQLite', 'PostgreSQL'] as const) {
    it(`on ${store}`, async () => {
      const t = await h.server({ url: store === 'SQLite' ? null : undefined })
      await seeded(t)
      expect((await api(t, 'summary')).active_sessions).toBe(2) // shared, solo
      expect((await api(t, 'summary?tenant=acme')).active_sessions).toBe(2) // shared (two agents), solo
      expect((await api(t, 'summary?tenant=globex')).active_sessions).toBe(1)
      // The session list keeps a row per agent and tenant: each row names both.
      const rows = (await api(t, 'sessions')).sessions.filter((s: { status: string }) => s.status === 'active')
      expect(rows).toHaveLength(4)
    })
  }
})
