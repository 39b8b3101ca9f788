import { calcPrice } from '@pydantic/genai-prices'
import Database from 'better-sqlite3'
import { hashKey } from '../../src/main/proxy/attribution'
import { fixture, fixtureJson } from '../support/fixtures'
import { expect } from 'vitest'
import { postJson, type Reply } from '../support/http'
import type { PostgresStore } from '../../src/main/storage/postgres'
import { migratePostgres } from '../../src/main/storage/postgres-migrations'
import type { MockUpstream } from '../support/mock-upstream'
import type { PgHarness } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/** gpt-5-nano: 11 prompt, 228 completion tokens (fixtures README). */
export const NANO_FIXTURE = 'openai-chat/chat-nonstream-reasoning.json'
export const NANO_COST = calcPrice({ input_tokens: 11, output_tokens: 228 }, 'gpt-5-nano-2025-08-07', { providerId: 'openai' })!.total_price

/** A gpt-5-nano chat call's body asking for up to 300 tokens (a reserve: max_tokens rule's call). */
export const RESERVE_BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }
/** The worst case the proxy reserves for RESERVE_BODY: body bytes / 3 as input, max tokens as output. */
export const RESERVE_WORST = calcPrice({ input_tokens: Math.ceil(Buffer.byteLength(JSON.stringify(RESERVE_BODY)) / 3), output_tokens: 300 }, 'gpt-5-nano', {
  providerId: 'openai',
})!.total_price

/** claude-sonnet-4-5: 12 input, 29 output (fixtures README). */
export const CLAUDE_FIXTURE = 'anthropic/messages-nonstream-basic.json'

export function replayJson(upstream: MockUpstream, file: string, extra: { headerDelayMs?: number } = {}): void {
  const body = fixture(file)
  upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body, ...extra }))
}

export function fixtureModel(file: string): string {
  return fixtureJson(file).model
}

export function chat(t: TestServer, key: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Reply> {
  return postJson(
    `${t.url}/v1/chat/completions`,
    { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100, ...body },
    { authorization: `Bearer ${key}`, ...headers },
  )
}

export interface Row {
  status: number
  cost_usd: number
  error: string | null
  api_key_hash: string
}

/** Every recorded call of `key`, read from the database file after a flush. */
export function callsOf(t: TestServer, key: string): Row[] {
  t.server.ledger.flush()
  const db = new Database(t.dbFile, { readonly: true })
  try {
    return db.prepare('SELECT status, cost_usd, error, api_key_hash FROM calls WHERE api_key_hash = ? ORDER BY id').all(hashKey(key)) as Row[]
  } finally {
    db.close()
  }
}

export function spentToday(t: TestServer, key: string): number {
  return t.server.ledger.spend.key(hashKey(key)).day
}

/**
 * A server in PostgreSQL mode on `url` (the harness's mock upstream, `config` merged in) and a store
 * of the test's own to look at the database, migrated first unless the server restarts on `dataDir`.
 */
export async function pgBudgetServer(h: PgHarness, url: string, config: Record<string, unknown>, dataDir?: string): Promise<TestServer & { store: PostgresStore }> {
  const store = h.store(url)
  if (!dataDir) await migratePostgres(store)
  return Object.assign(await h.server({ url, config, dir: dataDir }), { store })
}

/** What a refusal says: the refused call's worst case, and what the rule had spent and reserved. */
export function refusal(r: Reply): { worstCase: number; spent: number; reserved: number } {
  expect(r.status).toBe(429)
  const e = r.json().error
  const m = /could cost up to \$([\d.]+) .*after \$([\d.]+) reserved/.exec(e.message)
  expect(m, e.message).not.toBeNull()
  return { worstCase: Number(m![1]), spent: e.spent_usd, reserved: Number(m![2]) }
}

/** A deep-research job's stated output bound: its worst case is about $5.01, so a $6 daily limit fits one (background rehold tests). */
export const JOB_MAX_OUTPUT = 125_000

/** The one block rule of the background rehold tests: `pattern`'s keys, `model`'s jobs, $6 a day, reserved at their worst case. */
export const jobRules = (pattern: string, model: string) => [{ api_key_pattern: pattern, model_pattern: model, daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }]

/** Starts an o3-deep-research background job `id` for `key` (stated to JOB_MAX_OUTPUT tokens). */
export function startJob(t: TestServer, key: string, id: string): Promise<Reply> {
  return postJson(
    `${t.url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: JOB_MAX_OUTPUT, metadata: { id }, tools: [{ type: 'web_search_preview' }] },
    { authorization: `Bearer ${key}` },
  )
}
