import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { importLogs } from '../../src/main/import/importer'
import { openDatabase } from '../../src/main/ledger/db'
import { Pricer } from '../../src/main/pricing/price'

const pricer = new Pricer()
const T = Date.parse('2026-11-20T10:00:00.000Z')
const MODEL = 'claude-sonnet-4-5-20250929'
let dir: string
let db: Database.Database
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-partial-'))
  db = openDatabase(join(dir, 'b.db'))
})
afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

/** One Claude Code answer is several lines (one per content block) with one message id; the early ones carry a partial usage. */
const line = (out: number, ts: number, block: string) =>
  JSON.stringify({
    type: 'assistant', sessionId: 's', cwd: '/home/dev/x', timestamp: new Date(ts).toISOString(), requestId: 'req_1',
    message: { id: 'msg_STREAM', model: MODEL, content: [{ type: block }], usage: { input_tokens: 10, cache_read_input_tokens: 20000, output_tokens: out } },
  }) + '\n'

const priceOf = (output: number) =>
  pricer.price('anthropic', 'anthropic', MODEL, {
    input_tokens: 20010, output_tokens: output, cache_read_tokens: 20000, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, web_searches: 0, storage_searches: 0,
  }, new Date(T)).cost_usd

describe('an answer still being written when its log is imported', () => {
  it('takes its final usage at the next import: the call, its cost and the dashboard rollups', async () => {
    mkdirSync(join(dir, 'p/x'), { recursive: true })
    const f = join(dir, 'p/x/s.jsonl')
    writeFileSync(f, line(8, T, 'thinking'))
    // No server: nothing settles (`burnrate report` while Claude Code is mid-answer).
    const a = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'p')], pricer, now: T + 1000 })
    expect(a).toMatchObject({ imported: 1, updated: 0 })
    appendFileSync(f, line(2400, T + 20_000, 'text'))
    const b = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'p')], pricer, now: T + 60_000 })
    expect(b).toMatchObject({ imported: 0, updated: 1, duplicates: 0 })
    expect(b.cost_usd).toBe(priceOf(2400) - priceOf(8))
    const call = db.prepare('SELECT output_tokens, cost_usd, revision FROM calls').all() as any[]
    expect(call).toHaveLength(1)
    expect(call[0]).toMatchObject({ output_tokens: 2400, cost_usd: priceOf(2400) })
    // Revised: a team member's Burnrate sends it again.
    expect(call[0].revision).not.toBeNull()
    // The rollups moved with it (they had folded the partial call).
    const day = db.prepare('SELECT requests, output_tokens, cost_usd FROM dash_day').all() as any[]
    expect(day).toHaveLength(1)
    expect(day[0].requests).toBe(1)
    expect(day[0].output_tokens).toBe(2400)
    expect(day[0].cost_usd).toBeCloseTo(priceOf(2400), 12)
    // Read again, nothing more changes.
    appendFileSync(f, line(2400, T + 21_000, 'text'))
    const c = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'p')], pricer, now: T + 90_000 })
    expect(c).toMatchObject({ imported: 0, updated: 0, duplicates: 1 })
    expect(db.prepare('SELECT output_tokens FROM calls').pluck().all()).toEqual([2400])
  })

  it('a log entry matched to a proxied call leaves that call as the proxy recorded it (the answer\'s own record)', async () => {
    mkdirSync(join(dir, 'p/x'), { recursive: true })
    const f = join(dir, 'p/x/s.jsonl')
    writeFileSync(f, line(8, T, 'thinking'))
    await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'p')], pricer, now: T + 1000 })
    db.prepare("UPDATE calls SET source = 'proxy'").run()
    appendFileSync(f, line(2400, T + 20_000, 'text'))
    const b = await importLogs(db, { agent: 'claude-code', paths: [join(dir, 'p')], pricer, now: T + 60_000 })
    expect(b).toMatchObject({ imported: 0, updated: 0, duplicates: 1 })
  })
})
