import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * A Codex session forked (`/fork`, `codex fork`) is a new thread and session of its own, whose
 * rollout (test/fixtures/codex-fork) opens with its own `session_meta` (`forked_from_id` the
 * parent) and then a copy of the parent's items, its `session_meta` and token counts included
 * (codex-rs: a forked history is persisted as-is), before its own turns. The copies are the
 * parent's calls, counted once; the fork's own calls are the fork's session, as the proxy records
 * them (Codex sends the fork's id as `session-id`).
 */
const PARENT = '019a4b1c-2d3e-7f40-8a51-6b7c8d9e0f12'
const FORK = '019a4b9f-0a1b-7c2d-9e3f-4a5b6c7d8e90'
let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-fork-'))
  cpSync(resolve(__dirname, '../fixtures/codex-fork/sessions'), join(dir, 'sessions'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

it("Codex: a forked session's copy of its parent's calls is counted once, and its own calls are its session's", async () => {
  const s = await importLogs(db, { agent: 'codex', paths: [join(dir, 'sessions')], pricer: new Pricer(), now: Date.parse('2026-11-03T00:00:00Z') })
  expect(s).toMatchObject({ files: 2, imported: 3, duplicates: 2 })
  expect(db.prepare('SELECT session, input_tokens, output_tokens FROM calls ORDER BY ts').all()).toEqual([
    { session: PARENT, input_tokens: 8810, output_tokens: 402 },
    { session: PARENT, input_tokens: 9650, output_tokens: 188 },
    { session: FORK, input_tokens: 10490, output_tokens: 315 },
  ])
})

it("Codex: read before its parent's rollout (the parent archived), a fork's copies are still the parent's session", async () => {
  const other = mkdtempSync(join(tmpdir(), 'burnrate-codex-fork-first-'))
  try {
    cpSync(resolve(__dirname, '../fixtures/codex-fork/sessions'), join(other, 'sessions'), { recursive: true })
    // The parent moved to archived_sessions, read after sessions/.
    const day = '2026/11/02'
    const name = `rollout-2026-11-02T09-14-03-${PARENT}.jsonl`
    cpSync(join(other, 'sessions', day, name), join(other, 'archived_sessions', day, name))
    rmSync(join(other, 'sessions', day, name))
    const odb = openDatabase(join(other, 'burnrate.db'))
    try {
      const paths = [join(other, 'sessions'), join(other, 'archived_sessions')]
      const s = await importLogs(odb, { agent: 'codex', paths, pricer: new Pricer(), now: Date.parse('2026-11-03T00:00:00Z') })
      expect(s).toMatchObject({ files: 2, imported: 3, duplicates: 2 })
      expect(odb.prepare('SELECT session, input_tokens FROM calls ORDER BY ts').all()).toEqual([
        { session: PARENT, input_tokens: 8810 },
        { session: PARENT, input_tokens: 9650 },
        { session: FORK, input_tokens: 10490 },
      ])
    } finally {
      odb.close()
    }
  } finally {
    rmSync(other, { recursive: true, force: true })
  }
})
