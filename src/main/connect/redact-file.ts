import { parseDocument } from '@decimalturn/toml-patch'
import * as jsonc from 'jsonc-parser'
import { closeOf } from './formats/dotenv'
import type { FileKind } from './formats/types'
import { isSecretName, redactLine, redactShapes, redactText, shownString } from './redact'

/**
 * A whole agent's file as a plan shows it (the diff is made of it, before and after): its secrets
 * hinted by the structure of the file, as its format reads it. A string value is judged by the
 * keys it sits under and by its shape (./redact.ts shownString), wherever its text falls: a
 * TOML multi-line string, a JSON value on the line after its key, an array's items. Comments and
 * text that does not parse are read line by line (redactText); dotenv files and shell profiles
 * too, but for a quoted value that goes on over lines (`assignments`). The text keeps its lines, so the
 * diff's line numbers are the file's. Only what is shown is hinted: what Burnrate writes is the
 * file itself.
 */
export function redactFile(text: string, kind: FileKind): string {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : ''
  const body = text.slice(bom.length)
  if (kind === 'dotenv' || kind === 'shell') return assignments(text)
  const spans = kind === 'json' ? jsonSpans(body) : kind === 'toml' ? tomlSpans(body) : null
  if (spans === null) return redactText(text)
  let out = ''
  let at = 0
  for (const s of spans.sort((a, b) => a.start - b.start)) {
    if (s.start < at) return redactText(text)
    out += body.slice(at, s.start) + s.text
    at = s.end
  }
  return bom + redactShapes(out + body.slice(at))
}

/** A piece of the file's text shown otherwise: [start, end) replaced by `text`. */
interface Span {
  start: number
  end: number
  text: string
}

/** The spans of a JSON (with comments) file's strings and comments; null when it does not parse. */
function jsonSpans(text: string): Span[] | null {
  const spans: Span[] = []
  const errors: jsonc.ParseError[] = []
  jsonc.visit(
    text,
    {
      onLiteralValue(value: unknown, offset, length, _line, _col, pathOf) {
        if (typeof value !== 'string') return
        const shown = shownString(value, names(pathOf()))
        if (shown !== value) spans.push({ start: offset, end: offset + length, text: JSON.stringify(shown) })
      },
      onComment(offset, length) {
        spans.push({ start: offset, end: offset + length, text: redactText(text.slice(offset, offset + length)) })
      },
      onError(error) {
        errors.push({ error, offset: 0, length: 0 })
      },
    },
    { allowTrailingComma: true, disallowComments: false },
  )
  return errors.length > 0 ? null : spans
}

/** A path's keys, an array's items under the array's key. */
const names = (path: jsonc.JSONPath): string[] => path.filter((p): p is string => typeof p === 'string')

/** The parts of toml-patch's syntax tree read here (each node has where it is in the text). */
interface TomlNode {
  type: string
  loc: { start: { line: number; column: number }; end: { line: number; column: number } }
  raw?: string
  value?: unknown
  key?: TomlNode & { item?: TomlNode }
  item?: TomlNode
  items?: TomlNode[]
}

/** The spans of a TOML file's strings and comments; null when it does not parse, or the tree's places do not match the text. */
function tomlSpans(text: string): Span[] | null {
  let blocks: TomlNode[]
  try {
    blocks = parseDocument(text).cst as unknown as TomlNode[]
  } catch {
    return null
  }
  const starts = [0]
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1)
  const offset = (p: { line: number; column: number }): number => (starts[p.line - 1] ?? Number.NaN) + p.column
  const spans: Span[] = []
  let lost = false
  const place = (n: TomlNode): [number, number] | null => {
    const start = offset(n.loc.start)
    const end = offset(n.loc.end)
    if (text.slice(start, end) !== n.raw) {
      lost = true
      return null
    }
    return [start, end]
  }
  const visit = (n: TomlNode, path: readonly string[]): void => {
    if (n.type === 'Comment') {
      const at = place(n)
      if (at) spans.push({ start: at[0], end: at[1], text: redactText(n.raw as string) })
    } else if (n.type === 'String') {
      const value = n.value as string
      const shown = shownString(value, path)
      const at = shown === value ? null : place(n)
      if (at) spans.push({ start: at[0], end: at[1], text: tomlString(n.raw as string, shown) })
    } else if (n.type === 'KeyValue') {
      visit(n.value as TomlNode, [...path, ...((n.key?.value as string[]) ?? [])])
    } else if (n.type === 'Table' || n.type === 'TableArray') {
      const table = (n.key?.item?.value as string[]) ?? []
      for (const item of n.items ?? []) visit(item, table)
    } else if (n.type === 'InlineItem') {
      visit(n.item as TomlNode, path)
    } else if (n.type === 'InlineArray' || n.type === 'InlineTable') {
      for (const item of n.items ?? []) visit(item, path)
    }
  }
  for (const b of blocks) visit(b, [])
  return lost ? null : spans
}

/**
 * `shown` written as the TOML string `raw` was (basic or literal, on one line or many), on as
 * many lines as `raw`: a secret over three lines is hinted on the first, the other two left empty.
 */
function tomlString(raw: string, shown: string): string {
  const multi = raw.startsWith('"""') || raw.startsWith("'''")
  if (!multi) return raw.startsWith("'") && !/['\r\n]/.test(shown) ? `'${shown}'` : JSON.stringify(shown)
  const literal = raw.startsWith("'''") && !shown.includes("'''")
  const quote = literal ? "'''" : '"""'
  // The line break right after the opening quotes is not part of the value.
  const lead = /^(?:"""|''')(\r?\n)/.exec(raw)?.[1] ?? ''
  const body = literal ? shown : shown.replace(/\\/g, '\\\\').replace(/"""/g, '""\\"')
  const breaks = (s: string): number => s.split('\n').length - 1
  // A value with more line breaks than its text has (written as \n escapes): on one line, the text's breaks after it.
  if (breaks(lead + body) > breaks(raw)) return `${JSON.stringify(shown)}${'\n'.repeat(breaks(raw))}`
  return `${quote}${lead}${body}${'\n'.repeat(breaks(raw) - breaks(lead + body))}${quote}`
}

/**
 * A value read from a file (a setting's, the object a key must go in) as it is shown, in the
 * words `asText` gives it: a string as it is, anything else as JSON. `names` are the keys it sits
 * under; each string in it is judged by its own (shownString), as a file's are.
 */
export function shownValue(value: unknown, names: readonly string[]): string | null {
  if (value === undefined) return null
  const walk = (v: unknown, under: readonly string[]): unknown => {
    if (typeof v === 'string') return shownString(v, under)
    if (Array.isArray(v)) return v.map((x) => walk(x, under))
    if (typeof v === 'object' && v !== null && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...under, k])]))
    return v
  }
  const shown = walk(value, names)
  return redactShapes(typeof shown === 'string' ? shown : JSON.stringify(shown))
}

/** `NAME="…` / `export NAME='…` whose quote opens a value: groups 1 up to the quote, 2 the name, 3 the quote, 4 the rest. */
const OPENS = /^(\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*)(["'`])(.*)$/

/**
 * A dotenv file or a shell profile, line by line (redactLine), but for an assignment whose quoted
 * value goes on over the next lines (a PEM key, a token on a line of its own), read as dotenv reads
 * it (its quote closing on a later line, ./formats/dotenv.ts): under a secret's name the value is
 * hinted whole on its first line, its other lines left empty, so the text keeps its lines.
 */
function assignments(text: string): string {
  const parts = text.split(/(\r?\n)/)
  const lines = parts.filter((_, i) => i % 2 === 0)
  const shown = lines.map((l) => redactLine(l))
  for (let i = 0; i < lines.length; i++) {
    const m = OPENS.exec(lines[i])
    if (!m || closeOf(m[4], m[3]) !== null || !isSecretName(m[2])) continue
    let end = -1
    for (let j = i + 1; j < lines.length && end < 0; j++) if (closeOf(lines[j], m[3]) !== null) end = j
    if (end < 0) continue
    const after = closeOf(lines[end], m[3]) as string
    const value = [m[4], ...lines.slice(i + 1, end), lines[end].slice(0, lines[end].length - after.length - 1)].join('\n')
    shown[i] = `${m[1]}${m[3]}${shownString(value, [m[2]]).replace(/\n/g, '')}`
    for (let j = i + 1; j < end; j++) shown[j] = ''
    shown[end] = `${m[3]}${redactLine(after)}`
    i = end
  }
  return parts.map((p, i) => (i % 2 === 1 ? p : shown[i / 2])).join('')
}
