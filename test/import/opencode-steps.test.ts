import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * opencode before it gave each step its own message (2025: `streamText` with up to 1000 steps)
 * wrote one assistant message per turn, its `cost` the sum of its steps' but its `tokens` the last
 * step's (each `finish-step` set `tokens = usage.tokens`, `cost += usage.cost`), beside a
 * `step-finish` part per step (`storage/part/<message>/<part>.json`) with that step's tokens and
 * cost. test/fixtures/opencode-steps: msg_90f0e27d… (2025-09-03), three steps, three API calls;
 * msg_… of today's opencode (2026-05-17), one step, its message's tokens.
 */
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-opencode-steps-'))
  cpSync(resolve(__dirname, '../fixtures/opencode-steps'), join(dir, 'opencode'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it("an older opencode's message of several steps is each step's call, at its time; today's one-step message is one", async () => {
  const T0 = 1756894210000
  const s = await importLogs(db, { agent: 'opencode', paths: [join(dir, 'opencode')], pricer: new Pricer() })
  expect(s).toMatchObject({ files: 2, imported: 4, skipped_lines: 0 })
  const rows = db.prepare('SELECT ts, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, cost_usd FROM calls ORDER BY ts').all() as any[]
  expect(rows.map(({ cost_usd: _c, ...r }) => r)).toEqual([
    { ts: T0 + 6200, input_tokens: 4 + 13980, cache_read_tokens: 0, cache_write_tokens: 13980, output_tokens: 187 },
    { ts: T0 + 11800, input_tokens: 5 + 13980 + 1512, cache_read_tokens: 13980, cache_write_tokens: 1512, output_tokens: 96 },
    { ts: T0 + 19400, input_tokens: 5 + 15492 + 874, cache_read_tokens: 15492, cache_write_tokens: 874, output_tokens: 311 },
    { ts: 1779012000000, input_tokens: 6 + 16371 + 647, cache_read_tokens: 16371, cache_write_tokens: 647, output_tokens: 212 },
  ])
  for (const r of rows) expect(r.cost_usd).toBeGreaterThan(0)
  // Read again: nothing new.
  const again = await importLogs(db, { agent: 'opencode', paths: [join(dir, 'opencode')], pricer: new Pricer() })
  expect(again).toMatchObject({ imported: 0 })
})
