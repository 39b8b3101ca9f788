import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { INSERT_CALL_SQL, callValues } from '../../src/main/ledger/columns'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'
import { makeCall } from '../dashboard/seed'

/**
 * Codex names the provider a session runs on in its `session_meta` (`model_provider`: its
 * config's provider id, such as the `openrouter` of OpenRouter's Codex setup). Its calls are that
 * provider's, as the proxy records them through its route (`…/openrouter/v1`), not OpenAI's:
 * read as OpenAI's, a call through Burnrate had no twin (the proxy's is `openrouter`) and was
 * counted twice, and one around it was OpenAI's unpriced call ($0) of a model OpenAI has not.
 */
const pricer = new Pricer()
const T = Date.parse('2026-11-20T10:00:00.000Z')
const MODEL = 'anthropic/claude-sonnet-4.5'
const usage = { input_tokens: 5000, cached_input_tokens: 0, output_tokens: 400, reasoning_output_tokens: 0, total_tokens: 5400 }
let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-providers-'))
  db = openDatabase(join(dir, 'burnrate.db'))
  mkdirSync(join(dir, 'sessions/2026/11/20'), { recursive: true })
  writeFileSync(join(dir, 'sessions/2026/11/20/rollout-2026-11-20T09-59-55-s1.jsonl'), [
    { timestamp: new Date(T - 5000).toISOString(), type: 'session_meta', payload: { id: 's1', cwd: '/home/dev/api', model_provider: 'openrouter' } },
    { timestamp: new Date(T - 4000).toISOString(), type: 'turn_context', payload: { model: MODEL, cwd: '/home/dev/api' } },
    { timestamp: new Date(T + 2000).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage } } },
  ].map((x) => JSON.stringify(x)).join('\n') + '\n')
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const importCodex = () => importLogs(db, { agent: 'codex', paths: [join(dir, 'sessions')], pricer, now: T + 3_600_000 })

it('Codex on OpenRouter through Burnrate: the proxied openrouter call is the twin, counted once', async () => {
  db.prepare(INSERT_CALL_SQL).run(callValues(makeCall({
    ts: T, provider: 'openrouter', model: MODEL, endpoint: 'responses', agent: 'codex', streamed: true,
    input_tokens: 5000, output_tokens: 400, cost_usd: 0.021, response_id: '', source: 'proxy', billing: 'api',
  }), []))
  expect(await importCodex()).toMatchObject({ matched: 1, imported: 0 })
  expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(1)
})

it("Codex on OpenRouter around Burnrate: imported as OpenRouter's call, at its price", async () => {
  expect(await importCodex()).toMatchObject({ imported: 1 })
  const want = pricer.price('openrouter', 'openrouter', MODEL, { input_tokens: 5000, output_tokens: 400, cache_read_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, web_searches: 0, storage_searches: 0 }, new Date(T))
  expect(want.priced).toBe(true)
  expect(db.prepare('SELECT provider, priced, cost_usd FROM calls').get()).toEqual({ provider: 'openrouter', priced: 1, cost_usd: want.cost_usd })
})
