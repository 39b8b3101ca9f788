import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { recorded, rows } from '../providers/ledger'

/**
 * An opencode sub-agent's call, proxied, is recorded under the session that started it (its
 * `x-parent-session-id`); its opencode.db logs it under the sub-agent's own session, whose row in
 * the `session` table names that parent (`parent_id`). The import recognises the proxied call by
 * its counts and time, whatever the session (one record, one cost), and a call of the sub-agent
 * the proxy never saw is recorded under the same session as the proxied ones, its root's.
 */

const ROOT = 'ses_7a8b9c0d1e2fMnOpQrStUvWxYz'
const CHILD = 'ses_8b9c0d1e2f3aNoPqRsTuVwXyZa'
const GRANDCHILD = 'ses_9c0d1e2f3a4bOpQrStUvWxYzAb'

let upstream: MockUpstream
let t: TestServer
let dir: string

beforeAll(async () => {
  const answer = JSON.stringify({
    id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929',
    content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1000, output_tokens: 1000 },
  })
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer }))
  t = await startTestServer({}, upstream.url)
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-subagent-'))
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("an opencode sub-agent's calls, proxied and imported", () => {
  it('are one record per call, all under the root session', async () => {
    const proxied = await recorded(t, () =>
      request(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json', 'user-agent': 'opencode/1.18.33', 'anthropic-version': '2023-06-01',
          'x-api-key': 'sk-ant-api03-opencode-sub-0001', 'x-session-affinity': CHILD, 'X-Session-Id': CHILD, 'x-parent-session-id': ROOT,
        },
        body: JSON.stringify({ model: 'claude-sonnet-4-5-20250929', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
      }),
    )
    expect(proxied).toMatchObject({ agent: 'opencode', session: ROOT, input_tokens: 1000, output_tokens: 1000 })

    // opencode.db as 1.18.33 writes it: the sub-agents' sessions name their parents.
    const root = join(dir, 'opencode')
    mkdirSync(root, { recursive: true })
    const oc = new Database(join(root, 'opencode.db'))
    oc.exec('CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL)')
    oc.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
    const session = oc.prepare("INSERT INTO session VALUES (?, 'prj_1', ?, 's', '/home/dev/x', 't', '1.18.33')")
    session.run(ROOT, null)
    session.run(CHILD, ROOT)
    session.run(GRANDCHILD, CHILD)
    const message = (id: string, sessionID: string, ts: number, input: number) =>
      oc.prepare('INSERT INTO message VALUES (?, ?, ?)').run(id, sessionID, JSON.stringify({
        role: 'assistant', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', cost: 0.018, path: { cwd: '/home/dev/x' },
        time: { created: ts }, tokens: { input, output: 1000, reasoning: 0, cache: { read: 0, write: 0 } },
      }))
    // The proxied call, logged once answered; and two the proxy never saw.
    message('msg_a', CHILD, proxied.ts + 2000, 1000)
    message('msg_b', CHILD, proxied.ts - 60_000, 4000)
    message('msg_c', GRANDCHILD, proxied.ts - 30_000, 5000)
    oc.close()

    t.server.ledger.flush()
    const before = rows(t).length
    const db = openDatabase(t.dbFile)
    try {
      const stats = await importLogs(db, { agent: 'opencode', paths: [root], pricer: new Pricer(), now: proxied.ts + 3_600_000 })
      expect(stats).toMatchObject({ matched: 1, imported: 2 })
    } finally {
      db.close()
    }
    const after = rows(t)
    expect(after.length).toBe(before + 2)
    // The proxied call counted once: no second record of 1000/1000 tokens.
    expect(after.filter((r) => r.input_tokens === 1000 && r.output_tokens === 1000)).toHaveLength(1)
    expect(after.slice(before).map((r) => [r.input_tokens, r.session])).toEqual([
      [4000, ROOT],
      [5000, ROOT],
    ])
  })
})
