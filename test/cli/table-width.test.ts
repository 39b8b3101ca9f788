import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { runCliCaptured } from '../support/cli'
import { type TestServer, startTestServer } from '../support/server'

/**
 * `burnrate report` tables with names in any script, against a real server: an emoji or a CJK
 * character takes two columns of a terminal, a combining accent none, and a name too long for
 * its column is cut between two characters as a reader sees them (graphemes), never inside one
 * (half a surrogate pair prints as U+FFFD; an accent cut from its letter, a family emoji cut at
 * its joiner, are other characters). Every line of the table is as wide as the others.
 */
let t: TestServer
const now = Date.now()
const seg = new Intl.Segmenter('en', { granularity: 'grapheme' })
const graphemes = (s: string) => [...seg.segment(s)].map((x) => x.segment)
const WIDE = /^(\p{Extended_Pictographic}|[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6])/u
/** Columns a terminal gives `s`: two for an emoji or a CJK character, one for any other grapheme (with its accents). */
const columns = (s: string) => graphemes(s).reduce((n, g) => n + (WIDE.test(g) ? 2 : 1), 0)

/** Short names that fit whole, and long ones (in both parities of a two-unit character) that must be cut. */
const NAMES = [
  'plain-agent',
  '🤖 robot',
  '会话-日本語',
  'cafe\u0301-n\u0303', // e + U+0301, n + U+0303: one grapheme each
  '👨‍👩‍👧‍👦 family',
  '😀'.repeat(60),
  'a' + '😀'.repeat(60),
  '日本語のセッション'.repeat(8),
  'x' + '日本語のセッション'.repeat(8),
  'e\u0301'.repeat(90),
  'ab' + 'e\u0301'.repeat(90),
  '👨‍👩‍👧‍👦'.repeat(30),
  'q' + '👨‍👩‍👧‍👦'.repeat(30),
]

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  // Costs differ, so each name has its own place in the report.
  NAMES.forEach((agent, i) => t.server.ledger.record(makeCall({ ts: now - 60_000, agent, cost_usd: 1 + i / 100 })))
  await t.server.ledger.flushed()
})
afterAll(async () => {
  await t.cleanup()
})

describe('burnrate report tables with emoji, CJK and combining characters', () => {
  it('keeps every column aligned and cuts a long name only between graphemes', async () => {
    const r = await runCliCaptured('report', 'agent', '--url', t.url, '--config', t.configFile, '--data-dir', t.dir)
    expect(r.code).toBe(0)
    // What a terminal gets: UTF-8, where a lone surrogate would be U+FFFD.
    const printed = Buffer.from(r.out).toString('utf8')
    expect(printed).not.toContain('\uFFFD')
    const lines = printed.split('\n').filter((l) => /^[┌│└├]/.test(l))
    expect(lines.length).toBeGreaterThan(NAMES.length)
    // One width for every line of the table (borders, head, rows, total), within 80 columns.
    const widths = new Set(lines.map(columns))
    expect([...widths]).toHaveLength(1)
    expect([...widths][0]).toBeLessThanOrEqual(80)
    // And every column's border at the same place on each line.
    const borders = (l: string) => graphemes(l).reduce<{ at: number[]; col: number }>((a, g) => ((/[│┬┼┴┐┌└┘]/.test(g) && a.at.push(a.col)), (a.col += WIDE.test(g) ? 2 : 1), a), { at: [], col: 0 }).at
    for (const l of lines) expect(borders(l)).toEqual(borders(lines[0]))

    const cells = lines.filter((l) => l.startsWith('│')).map((l) => l.split('│')[1].trim())
    for (const name of NAMES) {
      const cell = cells.find((c) => c === name || (c.endsWith('…') && name.startsWith(c.slice(0, -1))))
      expect(cell, name).toBeDefined()
      if (cell === name) continue
      // Cut: the graphemes it keeps are the name's first ones, whole.
      const kept = graphemes(cell!.slice(0, -1))
      expect(kept, name).toEqual(graphemes(name).slice(0, kept.length))
      expect(kept.length).toBeGreaterThan(0)
    }
    // The short names are printed whole.
    for (const name of NAMES.slice(0, 5)) expect(cells).toContain(name)
  })
})
