import { strlen, truncate } from 'cli-table3/src/utils.js'
import type { Writable } from './context'
import { paint, visible } from './output'

const PLAIN = /^[\x20-\x7e]*$/
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * The columns `s` takes in a terminal, as the table itself measures a cell (cli-table3's strlen),
 * so the widths chosen here are the ones it pads to: an emoji or a CJK character two, a combining
 * accent none. (UTF-16 length counted an emoji two and a CJK character one.)
 */
function textWidth(s: string): number {
  return PLAIN.test(s) ? s.length : strlen(s)
}

/**
 * `s` in at most `width` columns: whole when it fits, else its first graphemes (characters as a
 * reader sees them: an emoji with its joiners and modifiers, a letter with its accents) and `…`.
 * Never cut inside one: half a surrogate pair prints as U+FFFD.
 */
function cut(s: string, width: number): string {
  if (textWidth(s) <= width) return s
  const room = Math.max(1, width - 1)
  let kept = ''
  let used = 0
  for (const { segment } of graphemes.segment(s)) {
    const w = textWidth(segment)
    if (used + w > room) break
    kept += segment
    used += w
  }
  return kept + '…'
}

export interface TableOptions {
  align?: ('left' | 'right')[]
  footer?: string[]
}

/** Lines yielded together: a chunk of the table, never the whole of a big one. */
const CHUNK_ROWS = 1000

/**
 * A table that fits the terminal (80 columns when not one): every column but the first has
 * its natural width; the first gets what is left and its cells are cut with `…` (between
 * graphemes). Widths are a terminal's columns, so emoji and CJK names keep the columns aligned.
 *
 * Yielded a chunk of lines at a time, for any number of rows. The lines are drawn here as
 * cli-table3 draws this table (its borders, a space of padding each side, a cell cut by its own
 * truncate and padded in its own measure), not by a cli-table3 table: its rendering
 * spreads every row into one call's arguments (Maximum call stack size exceeded from about
 * 100,000 rows), lays the cells out in a time that grows with the square of the rows, and keeps
 * an object per cell.
 *
 * Every cell is printed through `visible` (./output.ts): a name is whatever a caller sent, and a
 * control character in it (ESC, CSI, BEL, CR, a line break) is shown as its code, so it can
 * neither drive the terminal nor make a row of its own; the table's own bold is added after.
 */
export function* tablePages(out: Writable, head: string[], rows: string[][], opts: TableOptions = {}): Generator<string> {
  const width = Math.min(out.isTTY && out.columns ? out.columns : 80, 200)
  const { footer } = opts
  // Widths in a terminal's columns, as the table pads to them.
  const natural = head.map((h, i) => {
    let w = textWidth(visible(h))
    for (const r of rows) w = Math.max(w, textWidth(visible(r[i] ?? '')))
    if (footer) w = Math.max(w, textWidth(visible(footer[i] ?? '')))
    return w + 2
  })
  const rest = natural.slice(1).reduce((a, b) => a + b, 0) + head.length + 1
  const first = Math.max(8, Math.min(natural[0], width - rest))
  const colWidths = [first, ...natural.slice(1)]
  const align = opts.align ?? head.map((_, i) => (i === 0 ? 'left' : 'right'))
  const border = (l: string, m: string, r: string) => l + colWidths.map((w) => '─'.repeat(w)).join(m) + r + '\n'
  const draw = (cells: string[]) => drawRow(cells, colWidths, align)

  let chunk = border('┌', '┬', '┐') + draw(head.map((h) => paint(out, 'bold', visible(h))))
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i].map((c) => visible(c ?? ''))
    chunk += draw([cut(row[0], first - 2), ...row.slice(1)])
    if ((i + 1) % CHUNK_ROWS === 0) {
      yield chunk
      chunk = ''
    }
  }
  if (footer) {
    const f = footer.map((c) => visible(c ?? ''))
    chunk += draw([paint(out, 'bold', cut(f[0], first - 2)), ...f.slice(1).map((c) => paint(out, 'bold', c))])
  }
  yield chunk + border('└', '┴', '┘')
}

/**
 * One row's line as cli-table3 draws it (no line between rows): each cell's text in its
 * column less a space each side, cut with `…` when wider, padded on the side away from its
 * alignment. (A cell's line breaks are shown as `\x0A` by then: a row is one line.)
 */
function drawRow(cells: string[], widths: number[], align: ('left' | 'right')[]): string {
  let s = '│'
  for (let i = 0; i < widths.length; i++) {
    const room = widths[i] - 2
    let text = cells[i] ?? ''
    let w = textWidth(text)
    if (w > room) w = textWidth((text = truncate(text, room, '…')))
    // (cli-table3's pad, without measuring again what was just measured)
    const fill = ' '.repeat(Math.max(0, room - w))
    s += ' ' + (align[i] === 'right' ? fill + text : text + fill) + ' │'
  }
  return s + '\n'
}

/** The whole of a table of a few rows (see tablePages), as one string. */
export function table(out: Writable, head: string[], rows: string[][], opts: TableOptions = {}): string {
  let s = ''
  for (const page of tablePages(out, head, rows, opts)) s += page
  return s
}
