import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import type { LogAgent } from '../../src/main/import/types'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * A log's call whose line is valid JSON but has no time that can be read (a timestamp missing or
 * mangled: a hand-edited log, a tool that rewrote it) was dropped without a word: not imported,
 * and not counted among the bad lines, so the summary said every line was read. Each such call
 * is now counted as a bad line (`Bad lines`, skipped_lines in --json); the others are imported.
 */
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-untimed-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const T = '2026-11-20T10:00:00.000Z'
const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

async function imported(agent: LogAgent, root: string) {
  const db = openDatabase(join(dir, `${agent}.db`))
  try {
    const s = await importLogs(db, { agent, paths: [root], pricer: new Pricer() })
    return { imported: s.imported, skipped_lines: s.skipped_lines }
  } finally {
    db.close()
  }
}

it("each agent's call logged without a readable time is counted as a bad line", async () => {
  const claude = join(dir, 'claude')
  const answer = (id: string, timestamp?: string) => ({
    type: 'assistant', sessionId: 's1', cwd: '/home/dev/x', uuid: `u-${id}`, ...(timestamp ? { timestamp } : {}),
    message: { id, model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 100, output_tokens: 10 } },
  })
  write(join(claude, '-home-dev-x/s1.jsonl'), jsonl([answer('msg_1', T), answer('msg_2'), answer('msg_3', 'yesterday')]))
  expect(await imported('claude-code', claude)).toEqual({ imported: 1, skipped_lines: 2 })

  const codex = join(dir, 'codex')
  const count = (total: number, timestamp?: string) => ({
    ...(timestamp ? { timestamp } : {}), type: 'event_msg',
    payload: { type: 'token_count', info: { total_token_usage: { input_tokens: total, output_tokens: 10, total_tokens: total + 10 }, last_token_usage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 } }, rate_limits: null },
  })
  write(
    join(codex, '2026/11/20/rollout-2026-11-20T10-00-00-019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12.jsonl'),
    jsonl([
      { timestamp: T, type: 'session_meta', payload: { id: '019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12', cwd: '/home/dev/x', model_provider: 'openai' } },
      { timestamp: T, type: 'turn_context', payload: { cwd: '/home/dev/x', model: 'gpt-5.1-codex' } },
      count(100, T),
      count(200),
    ]),
  )
  expect(await imported('codex', codex)).toEqual({ imported: 1, skipped_lines: 1 })

  const gemini = join(dir, 'gemini')
  const msg = (id: string, timestamp?: string) => ({ id, type: 'gemini', ...(timestamp ? { timestamp } : {}), model: 'gemini-2.5-pro', tokens: { input: 1000, output: 100, cached: 0, thoughts: 0, tool: 0 } })
  write(join(gemini, 'shop/chats/session-2026-11-20T10-00-aaaa.jsonl'), jsonl([{ sessionId: 'g1' }, msg('gm_1', T), msg('gm_2')]))
  expect(await imported('gemini-cli', gemini)).toEqual({ imported: 1, skipped_lines: 1 })

  const oc = join(dir, 'opencode')
  const message = (id: string, created?: number) => ({
    id, role: 'assistant', sessionID: 'ses_1', providerID: 'anthropic', modelID: 'claude-sonnet-4-5-20250929', path: { cwd: '/home/dev/x' },
    time: created === undefined ? {} : { created }, tokens: { input: 1200, output: 300, reasoning: 0, cache: { read: 0, write: 0 } }, cost: 0.0081,
  })
  write(join(oc, 'storage/message/ses_1/msg_1.json'), JSON.stringify(message('msg_1', Date.parse(T))))
  write(join(oc, 'storage/message/ses_1/msg_2.json'), JSON.stringify(message('msg_2')))
  const dbFile = join(oc, 'opencode.db')
  const ocdb = new BetterSqlite(dbFile)
  ocdb.exec('CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)')
  for (const m of [message('msg_3', Date.parse(T) + 1000), message('msg_4')]) {
    const { id, sessionID, ...data } = m
    ocdb.prepare('INSERT INTO message VALUES (?, ?, ?)').run(id, sessionID, JSON.stringify(data))
  }
  ocdb.close()
  expect(await imported('opencode', oc)).toEqual({ imported: 2, skipped_lines: 2 })
})
