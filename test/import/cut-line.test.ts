import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * An agent appends each line with its newline in one write. One cut short (the disk full, the
 * agent killed mid-write) loses its tail and its newline with it, so the next line the agent (or
 * its resumed session) writes starts right after the cut, on the same line
 * (test/fixtures/claude-code-cut: msg_01RateB cut, msg_01RateC written after it). The cut line is
 * one bad line; the whole line written after it is still the agent's record.
 */
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-cut-line-'))
  cpSync(resolve(__dirname, '../fixtures/claude-code-cut/projects'), join(dir, 'projects'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it('a line written right after a line cut short is read; the cut one counts as a bad line', async () => {
  const s = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'projects')], pricer: new Pricer() })
  expect(s).toMatchObject({ files: 1, imported: 2, skipped_lines: 1 })
  expect(db.prepare('SELECT response_id, input_tokens, output_tokens FROM calls ORDER BY ts').all()).toEqual([
    { response_id: 'msg_01RateA', input_tokens: 4 + 2210 + 18044, output_tokens: 388 },
    { response_id: 'msg_01RateC', input_tokens: 3 + 410 + 20894, output_tokens: 97 },
  ])
})
