import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { createLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'
import { writeClaudeCodeCall } from '../support/agent-logs'

/**
 * The watcher matches a log's entries against the proxy's own calls, so those must be stored
 * first. When they cannot be (another process holds the SQLite file's write lock), the pass is
 * skipped and said once, and the next pass matches: a Codex call (no answer id in its log) made
 * through the proxy is stored once, not imported besides.
 */
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-watch-unstored-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const T = Date.now() - 3_600_000

function codexLog(home: string): void {
  const day = join(home, '.codex/sessions/2026/11/20')
  mkdirSync(day, { recursive: true })
  const usage = { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 }
  writeFileSync(join(day, 'rollout-a.jsonl'), [
    { timestamp: new Date(T - 5000).toISOString(), type: 'session_meta', payload: { id: 'sess-a', cwd: '/home/dev/api' } },
    { timestamp: new Date(T - 4000).toISOString(), type: 'turn_context', payload: { model: 'gpt-5-codex', cwd: '/home/dev/api' } },
    { timestamp: new Date(T + 2000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage } } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
}

it('a pass whose flush of the proxy\'s calls fails imports nothing and says so once; the next pass matches them', async () => {
  const file = join(dir, 'burnrate.db')
  const db = openDatabase(file, 200)
  const ledger = new Ledger(db, { flushIntervalMs: 60_000, maxPending: 1000, timezone: 'UTC' })
  const home = join(dir, 'home')
  codexLog(home)
  writeClaudeCodeCall(join(home, '.claude'), 'projects', 'claude-haiku-4-5-20251001')
  const warnings: string[] = []
  const log = createLogger('warn', (l) => warnings.push(l))
  const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log, env: {}, home, settleMs: 0 })

  // Another process (a `burnrate import`, say) holds the file's write lock while the proxy records the call.
  const other = new Database(file)
  other.exec('BEGIN IMMEDIATE')
  ledger.record(makeCall({
    ts: T, model: 'gpt-5-codex', provider: 'openai', endpoint: 'responses', api_key_hash: 'h', key_hint: 'k', agent: 'codex', streamed: true,
    input_tokens: 5000, output_tokens: 400, cost_usd: 0.01, latency_ms: 10, response_id: '', source: 'proxy', billing: 'api',
  }))
  // It lets go once the pass has found it locked for Claude Code's log (its import failed), before
  // Codex's log is read: Codex's flush found the file locked too.
  let released = false
  let passDone = false
  const watch = (): void => {
    if (warnings.some((l) => /claude-code's logs/.test(l))) {
      other.exec('COMMIT')
      released = true
    } else if (!passDone) setImmediate(watch)
  }
  setImmediate(watch)
  await w.runOnce()
  passDone = true
  if (!released) other.exec('COMMIT')
  expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import'").pluck().get()).toBe(0)

  // A second pass while it is locked again: skipped too, not said again.
  other.exec('BEGIN IMMEDIATE')
  ledger.record(makeCall({ ts: T, agent: 'claude-code', source: 'proxy' }))
  await w.runOnce()
  other.exec('COMMIT')
  other.close()
  expect(warnings.filter((l) => /proxy's calls could not be stored/.test(l))).toHaveLength(1)

  // The file is free again: the proxy's call is stored, and the logged one is its twin.
  await w.runOnce()
  expect(ledger.flush()).toBe(true)
  expect(db.prepare("SELECT source FROM calls WHERE agent = 'codex'").pluck().all()).toEqual(['proxy'])
  await w.stop()
  ledger.close()
  db.close()
})
