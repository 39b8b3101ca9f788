import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * The same gpt-5 answer (input 11400 of which 10192 cached, output 1864 of which 1408 reasoning:
 * the API's own counts) as two opencode versions logged it (test/fixtures/opencode-reasoning):
 * msg_b01 by one before its AI SDK 6 update (spring 2026), whose `output` was the SDK's output
 * tokens, reasoning included (OpenAI's completion tokens; its `total`, the provider's, is input
 * and output), msg_b02 by today's, whose `output` leaves the reasoning out (`total` adds it).
 * Both are one answer of 1864 output tokens, priced the same.
 */
const LOGS = resolve(__dirname, '../fixtures/opencode-reasoning')
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-reasoning-'))
  cpSync(LOGS, join(dir, 'opencode'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it("opencode: an older version's output that already holds the reasoning is not counted with it twice", async () => {
  const s = await importLogs(db, { agent: 'opencode', paths: [join(dir, 'opencode')], pricer: new Pricer() })
  expect(s).toMatchObject({ files: 2, imported: 2, skipped_lines: 0 })
  const rows = db.prepare('SELECT response_id, input_tokens, cache_read_tokens, output_tokens, reasoning_tokens, cost_usd, priced FROM calls ORDER BY ts').all() as any[]
  const answer = { input_tokens: 11400, cache_read_tokens: 10192, output_tokens: 1864, reasoning_tokens: 1408, priced: 1 }
  expect(rows[0]).toMatchObject(answer)
  expect(rows[1]).toMatchObject(answer)
  expect(rows[0].cost_usd).toBeGreaterThan(0)
  expect(rows[0].cost_usd).toBe(rows[1].cost_usd)
})
