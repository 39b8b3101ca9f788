import { PassThrough } from 'node:stream'
import { stripVTControlCharacters } from 'node:util'
import Table from 'cli-table3'
import { describe, expect, it } from 'vitest'
import type { Writable } from './context'
import { paint } from './output'
import { table, tablePages } from './table'

/**
 * The table drawn line by line is the one a cli-table3 table of the same widths and options
 * draws (what `burnrate report` printed before it had to print any number of rows): `cells` are
 * the cells as tablePages gives them (names already cut), `colWidths` its widths.
 */
function cliTable3(head: string[], cells: string[][], colWidths: number[]): string {
  const t = new Table({
    head,
    colWidths,
    colAligns: head.map((_, i) => (i === 0 ? 'left' : 'right')),
    style: { head: [], border: [], 'padding-left': 1, 'padding-right': 1 },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
    wordWrap: false,
  })
  for (const r of cells) t.push(r)
  return t.toString() + '\n'
}

/** The widths and cells of a drawn table, read back from its lines, to draw it again with cli-table3. */
function readBack(drawn: string): { head: string[]; cells: string[][]; colWidths: number[] } {
  const lines = drawn.trimEnd().split('\n')
  const colWidths = lines[0].slice(1, -1).split('┬').map((s) => s.length)
  const rows = lines.slice(1, -1).map((l) => l.slice(1, -1).split('│').map((c) => c.slice(1, -1).trim()))
  return { head: rows[0], cells: rows.slice(1), colWidths }
}

const plain: Writable = { write: () => true }
const tty: Writable = Object.assign(new PassThrough(), { isTTY: true, columns: 60 })
const NAMES = ['plain-agent', '🤖 robot', '会话-日本語', 'cafe\u0301-n\u0303', '👨‍👩‍👧‍👦 family', '😀'.repeat(60), 'x' + '日本語のセッション'.repeat(8), 'e\u0301'.repeat(90)]
const HEAD = ['Agent', 'Calls', 'Cost']

describe('tablePages', () => {
  it('draws what a cli-table3 table of the same widths draws, names in any script', () => {
    const rows = NAMES.map((n, i) => [n, String(i * 1000), `$${i}.00`])
    const drawn = table(plain, HEAD, rows, { footer: ['Total', '28k', '$28.00'] })
    const { head, cells, colWidths } = readBack(drawn)
    expect(head).toEqual(HEAD)
    expect(cells).toHaveLength(NAMES.length + 1)
    expect(drawn).toBe(cliTable3(head, cells, colWidths))
  })

  it('is the same in a terminal, with its bold head and total and its own width', () => {
    const rows = NAMES.map((n, i) => [n, String(i), `$${i}`])
    const drawn = table(tty, HEAD, rows, { footer: ['Total', '28', '$28'] })
    const { cells, colWidths } = readBack(stripVTControlCharacters(drawn))
    expect(colWidths.reduce((a, b) => a + b, 0) + colWidths.length + 1).toBe(60)
    const bold = (s: string) => paint(tty, 'bold', s)
    expect(bold('x')).not.toBe('x')
    expect(drawn).toBe(cliTable3(HEAD.map(bold), [...cells.slice(0, -1), cells.at(-1)!.map(bold)], colWidths))
  })

  it('draws a name with a line break or other control characters on one line, each shown as its code', () => {
    const drawn = table(plain, HEAD, [['two\nlines\x1b[2J', '1', '$1.00'], ['one', '2', '$2.00\x9b']])
    expect(drawn).toBe(cliTable3(HEAD, [['two\\x0Alines\\x1B[2J', '1', '$1.00'], ['one', '2', '$2.00\\x9B']], [21, 7, 11]))
  })

  it('draws a table of no rows, and of more rows than one chunk, in chunks that add up to it', () => {
    expect(table(plain, HEAD, [])).toBe(cliTable3(HEAD, [], [8, 7, 6]))
    const rows = Array.from({ length: 1500 }, (_, i) => [`session-${i}`, String(i), `$${i}.00`])
    const chunks = [...tablePages(plain, HEAD, rows, { footer: ['Total', '1.1M', '$1,124,250.00'] })]
    expect(chunks.length).toBeGreaterThan(1)
    const drawn = chunks.join('')
    const { cells, colWidths } = readBack(drawn)
    expect(drawn).toBe(cliTable3(HEAD, cells, colWidths))
    expect(cells).toHaveLength(1501)
  })
})
