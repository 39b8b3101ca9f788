import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { claudeCode } from '../../src/main/import/sources/claude-code'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * A Claude Code session logged in with a Claude account (each request logged with the
 * `oauth-2025-04-20` beta, `api-request`) that ran two subagents (test/fixtures/claude-code-fork,
 * as Claude Code 2.1.332 writes them): a general-purpose one, whose transcript
 * (`<session>/subagents/agent-<id>.jsonl`) has its requests logged in it, and a fork
 * (`subagent_type: "fork"`, a skill with `context: fork` alike), whose transcript opens with a
 * `fork-context-ref` to the parent's conversation and has no request logged (Claude Code records
 * no request of an agent whose transcript refers to its parent's context). Every call is the
 * plan's, as the proxy records them.
 */
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-claude-fork-'))
  cpSync(resolve(__dirname, '../fixtures/claude-code-fork/projects'), join(dir, 'projects'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it("a forked subagent's calls, logged without their requests, are its session's login: the plan's", async () => {
  const s = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer() })
  expect(s).toMatchObject({ files: 3, imported: 5, skipped_lines: 0 })
  const rows = db.prepare('SELECT response_id, session, billing, cost_usd FROM calls ORDER BY response_id').all() as any[]
  expect(rows.map((r) => [r.response_id, r.billing])).toEqual([
    ['msg_01ForkMainA', 'subscription'],
    ['msg_01ForkMainB', 'subscription'],
    ['msg_01ForkSubA', 'subscription'],
    ['msg_01ForkSubB', 'subscription'],
    ['msg_01PlainSubA', 'subscription'],
  ])
  for (const r of rows) expect(r.session).toBe('4e8b1f2a-9c3d-4a7e-b5f6-1d2c3b4a5e6f')
})

describe("a subagent's transcript without requests of its own", () => {
  const S = 'b7e2c4a1-0f3d-4c8e-9a6b-5d1e2f3a4b5c'
  const request = (id: string, at: string, oauth: boolean) => ({
    type: 'api-request', sessionId: S, id, timestamp: at, version: '2.1.332', querySource: 'repl_main_thread',
    params: { model: 'claude-sonnet-4-5-20250929', betas: oauth ? ['claude-code-20250219', 'oauth-2025-04-20'] : ['claude-code-20250219'] },
  })
  const answer = (id: string, at: string) => ({
    type: 'assistant', isSidechain: true, agentId: 'a1f0e2d3c4b5a6978', sessionId: S, cwd: '/home/dev/x', timestamp: at, requestRef: `r-${id}`,
    message: { id, model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 100, output_tokens: 10 } },
  })
  /** Each answer's billing in a fork's transcript, its session's transcript holding `session` (none: absent). */
  async function billings(session: object[] | null, answers: object[]): Promise<string[][]> {
    const root = mkdtempSync(join(tmpdir(), 'burnrate-claude-fork-'))
    try {
      const agents = join(root, '-home-dev-x', S, 'subagents')
      mkdirSync(agents, { recursive: true })
      if (session) writeFileSync(join(root, '-home-dev-x', `${S}.jsonl`), session.map((l) => JSON.stringify(l)).join('\n'))
      const fork = join(agents, 'agent-a1f0e2d3c4b5a6978.jsonl')
      writeFileSync(fork, [{ type: 'fork-context-ref', agentId: 'a1f0e2d3c4b5a6978', parentSessionId: S, parentLastUuid: 'u-1', contextLength: 1 }, ...answers].map((l) => JSON.stringify(l)).join('\n'))
      const read = await claudeCode.open!(root)
      return (await read(fork)).calls.map((c) => [c.response_id, c.billing ?? 'api'])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }

  it("takes the session's login at the time of each call when the session logged in both ways (/login midway)", async () => {
    const session = [request('r1', '2026-11-20T09:00:00.000Z', false), request('r2', '2026-11-20T10:00:00.000Z', true)]
    expect(await billings(session, [answer('m1', '2026-11-20T09:30:00.000Z'), answer('m2', '2026-11-20T10:30:00.000Z'), answer('m0', '2026-11-20T08:00:00.000Z')])).toEqual([
      ['m1', 'api'], ['m2', 'subscription'], ['m0', 'api'],
    ])
  })

  it('is money when its session logged no request, or its transcript is gone', async () => {
    expect(await billings([{ type: 'user', sessionId: S, message: { role: 'user', content: 'hi' } }], [answer('m1', '2026-11-20T09:30:00.000Z')])).toEqual([['m1', 'api']])
    expect(await billings(null, [answer('m1', '2026-11-20T09:30:00.000Z')])).toEqual([['m1', 'api']])
  })
})
