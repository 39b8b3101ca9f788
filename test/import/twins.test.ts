import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import type { CallRecord } from '../../src/main/ledger/record'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'

/**
 * An imported call is not stored again when the proxy recorded it: its twin is the proxied call
 * with the same answer id, else the same counts near the same time from the same provider (or
 * the plan's backend the agent's login sends it to), and never one that recorded another id.
 */
const pricer = new Pricer()
let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-import-twins-'))
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const T = Date.parse('2026-11-20T10:00:00.000Z')
const NOW = T + 3_600_000

function proxied(over: Partial<CallRecord>): void {
  const r = makeCall({
    ts: T, model: 'gpt-5-codex', endpoint: 'responses', api_key_hash: 'h', key_hint: 'k', agent: 'codex', streamed: true,
    input_tokens: 5000, output_tokens: 400, cost_usd: 0.01, latency_ms: 10, response_id: '', source: 'proxy', billing: 'api', ...over,
  })
  db.prepare(INSERT_CALL_SQL).run(callValues(r, []))
}
const calls = () => db.prepare('SELECT provider, billing, source, response_id, output_tokens, cost_usd FROM calls ORDER BY id').all() as any[]

function codexLog(root: string, name: string, session: string, ts: number) {
  mkdirSync(join(root, '2026/11/20'), { recursive: true })
  writeFileSync(join(root, `2026/11/20/rollout-${name}.jsonl`), [
    { timestamp: new Date(ts - 5000).toISOString(), type: 'session_meta', payload: { id: session, cwd: '/home/dev/api' } },
    { timestamp: new Date(ts - 4000).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-codex', cwd: '/home/dev/api' } },
    { timestamp: new Date(ts).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: {
      total_token_usage: { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 },
      last_token_usage: { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 } } } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
}

describe('a logged call and its proxied twin', () => {
  it('Codex with an API key: the proxied call (provider openai) is the logged one\'s twin, counted once', async () => {
    proxied({ provider: 'openai' })
    const root = join(dir, 'codex')
    codexLog(root, 'a', 'sess-a', T + 2000)
    const s = await importLogs(db, { agent: 'codex', paths: [root], pricer, now: NOW })
    expect(s).toMatchObject({ matched: 1, imported: 0 })
  })

  it('Codex logged in with ChatGPT: the proxied call (provider chatgpt, plan usage) is the twin; the log adds no API money', async () => {
    proxied({ provider: 'chatgpt', billing: 'subscription' })
    const root = join(dir, 'codex')
    codexLog(root, 'a', 'sess-a', T + 2000)
    const s = await importLogs(db, { agent: 'codex', paths: [root], pricer, now: NOW })
    expect(calls()).toHaveLength(1)
    expect(s).toMatchObject({ matched: 1, imported: 0 })
  })

  it('Gemini CLI logged in with Google: the proxied call (provider code-assist) is the twin', async () => {
    proxied({ provider: 'code-assist', billing: 'subscription', model: 'gemini-2.5-pro', endpoint: 'streamGenerateContent', input_tokens: 8200, output_tokens: 822, agent: 'gemini-cli' })
    const root = join(dir, 'gemini')
    mkdirSync(join(root, 'abc/chats'), { recursive: true })
    writeFileSync(join(root, 'abc/chats/session-1.jsonl'), [
      { sessionId: 'g1', projectHash: 'abc', startTime: new Date(T).toISOString() },
      { id: 'm1', type: 'gemini', timestamp: new Date(T + 1000).toISOString(), model: 'gemini-2.5-pro', content: 'x',
        tokens: { input: 8200, output: 310, cached: 0, thoughts: 512, tool: 0, total: 9022 } },
    ].map((x) => JSON.stringify(x)).join('\n') + '\n')
    const s = await importLogs(db, { agent: 'gemini-cli', paths: [root], pricer, now: NOW })
    expect(calls()).toHaveLength(1)
    expect(s).toMatchObject({ matched: 1, imported: 0 })
  })

  it('Claude Code: a logged message whose id differs from a proxied call\'s id is another call, even with equal token counts', async () => {
    proxied({ provider: 'anthropic', model: 'claude-haiku-4-5-20251001', endpoint: 'messages', agent: 'claude-code', response_id: 'msg_PROXIED', input_tokens: 120, output_tokens: 1 })
    const root = join(dir, 'claude')
    mkdirSync(join(root, 'p'), { recursive: true })
    writeFileSync(join(root, 'p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', cwd: '/x', timestamp: new Date(T + 30_000).toISOString(),
      message: { id: 'msg_OTHER', model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 120, output_tokens: 1 } },
    }) + '\n')
    const s = await importLogs(db, { agent: 'claude-code', paths: [root], pricer, now: NOW })
    // msg_OTHER never went through the proxy: it is imported, and msg_PROXIED stays the proxy's.
    expect(s).toMatchObject({ imported: 1, matched: 0 })
    expect(calls()).toHaveLength(2)
  })

  it('Claude Code on Microsoft Foundry: the proxied call (provider foundry) is the twin of a logged message with no id, counted once', async () => {
    proxied({ provider: 'foundry', model: 'claude-sonnet-4-5-20250929', endpoint: 'messages', agent: 'claude-code', input_tokens: 3400, output_tokens: 57 })
    const root = join(dir, 'claude')
    mkdirSync(join(root, 'p'), { recursive: true })
    writeFileSync(join(root, 'p/s.jsonl'), JSON.stringify({
      type: 'assistant', sessionId: 's', uuid: 'u1', cwd: '/x', timestamp: new Date(T + 2000).toISOString(),
      message: { model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 3400, output_tokens: 57 } },
    }) + '\n')
    const s = await importLogs(db, { agent: 'claude-code', paths: [root], pricer, now: NOW })
    expect(s).toMatchObject({ matched: 1, imported: 0 })
    expect(calls()).toHaveLength(1)
  })
})
