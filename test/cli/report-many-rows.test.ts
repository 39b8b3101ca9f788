import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCliCaptured } from '../support/cli'
import { seedSessions } from '../support/many-sessions'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate report session --all` for a heavy user's year: 200,000 sessions in a real SQLite
 * ledger, asked of a real server. The table used to be one cli-table3 table of every row, whose
 * rendering spreads the rows into one call's arguments (Maximum call stack size exceeded from about
 * 100,000 rows); the JSON and the CSV were built as one string. Every row prints, in the format a
 * small report has always had.
 */
const N = 200_000
/** `report session --limit 4` of this ledger as it printed when the table was one cli-table3 table. */
const SMALL = [
  'Burnrate session report (the beginning to now, UTC)',
  '┌────────────────────┬───────┬───────┬────────┬────────┬───────────┐',
  '│ Session            │ Calls │ Input │ Output │ Cached │      Cost │',
  '│ sess-199999        │     1 │  200k │    449 │      0 │     $0.02 │',
  '│ proj-1 sess-199998 │     1 │  200k │    448 │   201k │     $0.02 │',
  '│ sess-199997        │     1 │  200k │    447 │      0 │     $0.02 │',
  '│ proj-6 sess-199996 │     1 │  200k │    446 │      0 │     $0.02 │',
  '│ Total              │  200k │ 20.0B │  49.9M │   6.7B │ $2,199.99 │',
  '└────────────────────┴───────┴───────┴────────┴────────┴───────────┘',
  'The costliest 4 of 200,000 sessions listed; the totals are of all.',
  '--limit n or --all lists more.',
  '',
].join('\n')
let t: TestServer
const cli = (...args: string[]) => runCliCaptured('report', 'session', ...args, '--url', t.url, '--config', t.configFile, '--data-dir', t.dir)

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-test-'))
  seedSessions(dir, N)
  t = await startTestServer({ timezone: 'UTC' }, undefined, dir)
})
afterAll(async () => {
  await t?.cleanup()
})

describe('burnrate report with 200,000 rows', () => {
  it('prints a table of every one, as wide as its widest row on every line', async () => {
    const r = await cli('--all')
    expect(r.code, r.out.slice(0, 500)).toBe(0)
    const lines = r.out.split('\n')
    expect(lines[0]).toBe('Burnrate session report (the beginning to now, UTC)')
    const body = lines.filter((l) => /^[┌│└├]/.test(l))
    // Top border, head, a line per session, the total, the bottom border: nothing between them.
    expect(body).toHaveLength(N + 4)
    expect(lines.slice(1, N + 5)).toEqual(body)
    expect(body[0]).toMatch(/^┌─+┬/)
    expect(body[1]).toMatch(/^│ Session +│ Calls │/)
    expect(body[2]).toMatch(/^│ sess-199999 +│ +1 │/)
    expect(body[N + 1]).toMatch(/^│ the-longest-project sess-0 │ +1 │/)
    expect(body[N + 2]).toMatch(/^│ Total +│ +200k │/)
    expect(body[N + 3]).toMatch(/^└─+┴/)
    // Columns sized over all rows: the widest name is the last row's; the other columns are a small report's.
    const top = SMALL.split('\n')[1]
    expect(body[0]).toBe('┌' + '─'.repeat(' the-longest-project sess-0 '.length) + top.slice(top.indexOf('┬')))
    for (let i = 0; i < body.length; i++) if (body[i].length !== body[0].length) expect(body[i], `line ${i}`).toHaveLength(body[0].length)
    // Each session once.
    expect(new Set(body.slice(2, N + 2).map((l) => l.split('│')[1].trim())).size).toBe(N)
    expect(lines.slice(N + 5)).toEqual([''])
  })

  it('prints a small report exactly as before', async () => {
    const r = await cli('--limit', '4')
    expect(r.code).toBe(0)
    expect(r.out).toBe(SMALL)
  })

  it('prints every row as JSON, the same bytes as the whole report indented at once', async () => {
    const r = await cli('--all', '--json')
    expect(r.code, r.out.slice(0, 500)).toBe(0)
    const json = JSON.parse(r.out)
    expect(json.rows).toHaveLength(N)
    expect(json.total_rows).toBe(N)
    expect(r.out).toBe(JSON.stringify(json, null, 2) + '\n')
  })

  it('prints every row as CSV', async () => {
    const r = await cli('--all', '--csv')
    expect(r.code, r.out.slice(0, 500)).toBe(0)
    const lines = r.out.split('\r\n')
    expect(lines).toHaveLength(N + 2)
    expect(lines[0]).toBe('key,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,imported,models,agent,project,unpriced_requests')
    expect(lines[1]).toBe('sess-199999,1,200099,449,0,0,0.0209999,0,gpt-4o-mini,codex,,0')
    expect(lines[N]).toBe('sess-0,1,100,50,1000,0,0.001,0,gpt-4o-mini,codex,/home/u/the-longest-project,0')
    expect(lines[N + 1]).toBe('')
  })
})
