import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite from 'better-sqlite3'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'

/**
 * A long Claude Code session's transcript passes 512 MiB (its tool results are kept inline; users
 * report files of 780 MB and 3.8 GB), longer than a JavaScript string can be. Read whole, the file
 * failed every import (`burnrate import`, and the `report` and `status` that import first) with
 * V8's "Cannot create a string longer than…", and the calls of every file sorted after it were
 * never imported. It is read a chunk at a time: what it holds is imported, memory bounded by a line.
 */
const MiB = 1024 * 1024
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-huge-log-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const assistant = (id: string, ts: string, output: number) =>
  JSON.stringify({
    type: 'assistant', sessionId: 'long', cwd: '/home/dev/shop', timestamp: ts, uuid: `u-${id}`,
    message: { id, model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 1000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: output } },
  }) + '\n'

it('Claude Code: a transcript longer than a string can be is imported, every call of it, and the files after it too', async () => {
  const root = join(dir, 'projects')
  mkdirSync(join(root, 'a-shop'), { recursive: true })
  mkdirSync(join(root, 'b-later'), { recursive: true })
  const big = join(root, 'a-shop/long.jsonl')
  writeFileSync(big, assistant('msg_first', '2026-11-20T10:00:00.000Z', 10))
  // 520 user lines of 1 MiB each (tool results with a big file's text): 520 MiB, over V8's 512 MiB.
  const filler = JSON.stringify({ type: 'user', sessionId: 'long', message: { role: 'user', content: [{ type: 'tool_result', content: 'x'.repeat(MiB - 100) }] } }) + '\n'
  const block = filler.repeat(8)
  for (let i = 0; i < 65; i++) appendFileSync(big, block)
  // A CRLF line ending and the last line without one: read as before.
  appendFileSync(big, assistant('msg_last', '2026-11-20T11:00:00.000Z', 20).replace('\n', '\r\n'))
  appendFileSync(big, assistant('msg_tail', '2026-11-20T11:05:00.000Z', 30).trimEnd())
  writeFileSync(join(root, 'b-later/short.jsonl'), assistant('msg_other', '2026-11-20T12:00:00.000Z', 40))

  const r = await runCliCaptured('import', 'claude-code', '--path', root, '--data-dir', join(dir, 'data'), '--local', '--json')
  expect(r.out).not.toMatch(/longer than|Invalid string length/)
  expect(r.code).toBe(0)
  const [s] = JSON.parse(r.out).results
  expect(s).toMatchObject({ files: 2, imported: 4, skipped_lines: 0 })
  const db = new BetterSqlite(join(dir, 'data/burnrate.db'), { readonly: true })
  try {
    expect(db.prepare('SELECT response_id, output_tokens FROM calls ORDER BY ts').all()).toEqual([
      { response_id: 'msg_first', output_tokens: 10 },
      { response_id: 'msg_last', output_tokens: 20 },
      { response_id: 'msg_tail', output_tokens: 30 },
      { response_id: 'msg_other', output_tokens: 40 },
    ])
  } finally {
    db.close()
  }
})

it('a line read a chunk at a time: a marker cut between two chunks still marks it; a line over the limit is a bad line, and is not kept', async () => {
  const { fileJsonLines } = await import('../../src/main/import/lines')
  const line = assistant('msg_cut', '2026-11-20T10:00:00.000Z', 7)
  const at = line.indexOf('"usage"')
  for (let cut = 1; cut < '"usage"'.length; cut++) {
    // The file is read in 1 MiB chunks: the marker starts `cut` bytes before the first chunk ends.
    const empty = JSON.stringify({ type: 'user', message: { content: '' } }).length
    const padded = JSON.stringify({ type: 'user', message: { content: 'x'.repeat(MiB - cut - at - 2 - empty) } })
    const file = join(dir, `cut-${cut}.jsonl`)
    writeFileSync(file, padded + '\r\n' + line)
    const counter = { skipped: 0 }
    const got = []
    for await (const v of fileJsonLines(file, counter, ['"usage"'])) got.push(v)
    expect(Buffer.byteLength(padded + '\r\n') + at, `cut ${cut}`).toBe(MiB - cut)
    expect(got.map((v) => v.message.id), `cut ${cut}`).toEqual(['msg_cut'])
    expect(counter.skipped).toBe(0)
  }
  const file = join(dir, 'long-line.jsonl')
  writeFileSync(file, '\uFEFF' + line + JSON.stringify({ message: { usage: {}, content: 'y'.repeat(3 * MiB) } }) + '\n' + 'z'.repeat(3 * MiB) + '\n' + line)
  const counter = { skipped: 0 }
  const got = []
  for await (const v of fileJsonLines(file, counter, ['"usage"'], 2 * MiB)) got.push(v)
  // The BOM'd first line and the last are read; the marked line over 2 MiB is a bad line; the unmarked one is not counted.
  expect(got.map((v) => v.message.id)).toEqual(['msg_cut', 'msg_cut'])
  expect(counter.skipped).toBe(1)
})
