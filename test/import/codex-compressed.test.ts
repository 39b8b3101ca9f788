import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import zlib from 'node:zlib'
import type Database from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

/**
 * Codex compresses a rollout it no longer writes to (codex-rs/rollout/src/compression.rs): the
 * file becomes `rollout-….jsonl.zst` (zstd), the plain `.jsonl` removed, written through a
 * `….jsonl.zst.compress.<n>.tmp` file first. Its calls are the session's all the same.
 */
const LOGS = resolve(__dirname, '../fixtures/codex-compressed/sessions')
const DAY = '2026/09/14'
const NAME = 'rollout-2026-09-14T08-12-40-01993c2a-5d10-7e21-8a44-2b7f60c1d9e3.jsonl'
const zstd = typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'

let dir: string
let db: Database.Database
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-codex-zst-'))
  cpSync(LOGS, join(dir, 'sessions'), { recursive: true })
  db = openDatabase(join(dir, 'burnrate.db'))
})
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const compress = (plain: string, to: string) => writeFileSync(to, zlib.zstdCompressSync(readFileSync(plain)))
const opts = () => ({ agent: 'codex' as const, paths: [join(dir, 'sessions')], pricer: new Pricer(), now: Date.parse('2026-09-15T00:00:00Z') })

it.runIf(zstd)("Codex: a compressed rollout (.jsonl.zst) is read as its .jsonl; its compression's temporary file is not", async () => {
  const plain = join(dir, 'sessions', DAY, NAME)
  compress(plain, `${plain}.zst`)
  // A compression under way: a partial copy beside the finished one, never read.
  writeFileSync(`${plain}.zst.compress.1.0.tmp`, zlib.zstdCompressSync(readFileSync(plain)).subarray(0, 40))
  unlinkSync(plain)
  const s = await importLogs(db, opts())
  expect(s).toMatchObject({ files: 1, imported: 2, skipped_lines: 0 })
  const rows = db.prepare('SELECT model, session, project, input_tokens, cache_read_tokens, output_tokens, reasoning_tokens FROM calls ORDER BY ts').all()
  const call = { model: 'gpt-5.1-codex', session: '01993c2a-5d10-7e21-8a44-2b7f60c1d9e3', project: '/home/dev/billing' }
  expect(rows).toEqual([
    { ...call, input_tokens: 9410, cache_read_tokens: 4864, output_tokens: 612, reasoning_tokens: 384 },
    { ...call, input_tokens: 10280, cache_read_tokens: 9216, output_tokens: 208, reasoning_tokens: 64 },
  ])
  // Read again unchanged: nothing; the same rollout plain again beside it (Codex reads the plain one first): nothing new.
  expect(await importLogs(db, opts())).toMatchObject({ files: 0, unchanged: 1, imported: 0 })
  cpSync(join(LOGS, DAY, NAME), plain)
  expect(await importLogs(db, opts())).toMatchObject({ files: 1, imported: 0, duplicates: 2 })
})

it.runIf(zstd)('Codex: a compressed rollout cut short is read up to its cut, counted as a bad line, and the other logs are read', async () => {
  const other = join(dir, 'sessions', DAY, 'rollout-2026-09-14T09-00-00-01993c2a-0000-7000-8000-000000000001.jsonl')
  const lines = readFileSync(join(LOGS, DAY, NAME), 'utf8').replaceAll('01993c2a-5d10-7e21-8a44-2b7f60c1d9e3', '01993c2a-0000-7000-8000-000000000001')
  const packed = zlib.zstdCompressSync(Buffer.from(lines))
  writeFileSync(`${other}.zst`, packed.subarray(0, packed.length - 8))
  const s = await importLogs(db, opts())
  expect(s.files).toBe(1)
  expect(s.skipped_lines).toBe(1)
  expect(s.unreadable).toEqual([])
})
