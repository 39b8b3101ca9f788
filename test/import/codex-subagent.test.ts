import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type Database from 'better-sqlite3'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * Codex 0.171 writes a sub-agent's thread (`codex exec review`'s review, a spawned agent) to a
 * rollout of its own, whose `session_meta` names the thread (`id`), the session it belongs to
 * (`session_id`) and its `parent_thread_id` (as the real-agents suite's `codex exec review` run
 * wrote them). Its calls are the session's, as the proxy records them from `session-id`.
 */
const ROOT = '01a24974-5753-7bd0-a3f7-486807a8bc4d'
const REVIEW = '01a24974-5808-7713-a7f8-58cf1d02b703'

let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-subagent-'))
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

function rollout(thread: string, meta: Record<string, unknown>, at: string): void {
  const usage = { input_tokens: 900, cached_input_tokens: 0, output_tokens: 100, reasoning_output_tokens: 0, total_tokens: 1000 }
  const lines = [
    { timestamp: at, type: 'session_meta', payload: { id: thread, session_id: ROOT, cwd: '/home/dev/api', originator: 'codex_exec', ...meta } },
    { timestamp: at, type: 'turn_context', payload: { model: 'gpt-5-codex', cwd: '/home/dev/api' } },
    // The same running total in both threads: each counts from its own start.
    { timestamp: at, type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage } } },
  ]
  const folder = join(dir, 'sessions/2026/12/06')
  mkdirSync(folder, { recursive: true })
  writeFileSync(join(folder, `rollout-2026-12-06T03-44-51-${thread}.jsonl`), lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
}

it("Codex: a review sub-agent's rollout is imported under the session it belongs to, each thread's calls once", async () => {
  rollout(ROOT, {}, '2026-12-06T03:44:51.100Z')
  rollout(REVIEW, { parent_thread_id: ROOT }, '2026-12-06T03:44:52.200Z')
  const s = await importLogs(db, { agent: 'codex', paths: [join(dir, 'sessions')], pricer: new Pricer(), now: Date.parse('2026-12-06T05:00:00Z') })
  expect(s).toMatchObject({ files: 2, imported: 2, duplicates: 0 })
  const rows = db.prepare('SELECT session, input_tokens FROM calls ORDER BY ts').all()
  expect(rows).toEqual([
    { session: ROOT, input_tokens: 900 },
    { session: ROOT, input_tokens: 900 },
  ])
})
