import { type ConfigDoc, type FileFormat, type KeyPath, MalformedError, eolOf } from './types'

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/
/** One assignment; a quoted value may go on over the next lines (`entries`). */
const LINE = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)(.*)$/s

function unquote(raw: string): string {
  const v = raw.trim()
  const m = /^(['"`])(.*)\1(\s+#.*)?$/s.exec(v)
  // dotenv reads a value's line breaks as \n whatever the file's are.
  if (m) return m[1] === '"' ? m[2].replace(/\r\n?/g, '\n').replace(/\\n/g, '\n') : m[2].replace(/\r\n?/g, '\n')
  return v.replace(/\s+#.*$/, '')
}

/** A value's trailing comment (` # …` after the value, outside its quotes), or ''. */
function commentOf(raw: string): string {
  return /^(?:(['"`]).*\1|[^#]*?)(\s+#.*)$/s.exec(raw)?.[2] ?? ''
}

/**
 * The file's lines as entries: one line each, except an assignment whose quoted value goes on
 * over the next lines (a PEM key in double quotes), which is one entry up to the line its quote
 * closes on, as dotenv reads it: the closing quote is the first one not after a backslash, and
 * only a comment may follow it. A quote that never closes so is read as one line, as dotenv does.
 */
function entries(lines: string[], eol: string): string[] {
  const out: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const value = LINE.exec(lines[i])?.[4].trimStart() ?? ''
    const q = /^['"`]/.test(value) ? value[0] : null
    let end = -1
    if (q && closeOf(value.slice(1), q) === null) {
      for (let j = i + 1; j < lines.length && end < 0; j++) {
        const rest = closeOf(lines[j], q)
        if (rest !== null) end = /^\s*(#.*)?$/.test(rest) ? j : lines.length
      }
    }
    if (end < 0 || end >= lines.length) out.push(lines[i])
    else {
      out.push(lines.slice(i, end + 1).join(eol))
      i = end
    }
  }
  return out
}

/** What follows the first `q` in `text` not after a backslash, or null when there is none. */
export function closeOf(text: string, q: string): string | null {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\' && text[i + 1] === q) i++
    else if (text[i] === q) return text.slice(i + 1)
  }
  return null
}

function quote(v: string): string {
  return /^[A-Za-z0-9_./:@%+,-]*$/.test(v) ? v : `"${v.replace(/(["\\])/g, '\\$1')}"`
}

/**
 * A dotenv file (Gemini CLI's `~/.gemini/.env`), edited line by line: only the `NAME=value` line
 * of the variable Burnrate owns is replaced, added at the end, or removed; every other line stays
 * as it was. No npm library edits dotenv files in place, and the format is one assignment a line
 * (a quoted value may go on over the next lines, kept as they are).
 */
export const dotenvFormat: FileFormat = {
  kind: 'dotenv',
  open(original: string): ConfigDoc {
    const eol = eolOf(original)
    const physical = original === '' ? [] : original.split(/\r?\n/)
    const trailing = physical.length > 0 && physical[physical.length - 1] === ''
    if (trailing) physical.pop()
    const lines = entries(physical, eol)
    let lineNo = 1
    for (const line of lines) {
      if (line.trim() !== '' && !line.trim().startsWith('#') && !LINE.test(line)) throw new MalformedError(`not a dotenv file: line ${lineNo} is not NAME=value`)
      lineNo += line.split(eol).length
    }
    const key = (path: KeyPath) => {
      if (path.length !== 1 || !NAME.test(path[0])) throw new Error(`dotenv: bad variable name ${path.join('.')}`)
      return path[0]
    }
    /** Whether a line was set or removed: the text then ends with a line ending (./types.ts endingLine). */
    let edited = false
    /** Index of the line that sets `name` (the last one wins, as in dotenv). */
    const find = (name: string) => {
      for (let i = lines.length - 1; i >= 0; i--) if (LINE.exec(lines[i])?.[2] === name) return i
      return -1
    }
    return {
      get(path) {
        const i = find(key(path))
        return i < 0 ? undefined : unquote(LINE.exec(lines[i])![4])
      },
      set(path, value) {
        const name = key(path)
        edited = true
        const v = quote(String(value))
        const i = find(name)
        if (i >= 0) {
          const m = LINE.exec(lines[i])!
          // The line's own quotes (where the value needs no escaping in them) and comment stay
          // (`export X="…" # corp gateway`): undone later, the line reads as it did.
          const q = /^\s*(['"])/.exec(m[4])?.[1]
          const raw = String(value)
          const kept = q && !/['"\\\n`]/.test(raw) ? `${q}${raw}${q}` : v
          lines[i] = `${m[1]}${m[2]}${m[3]}${kept}${commentOf(m[4])}`
        } else lines.push(`${name}=${v}`)
      },
      delete(path) {
        const name = key(path)
        for (let i = lines.length - 1; i >= 0; i--) {
          if (LINE.exec(lines[i])?.[2] !== name) continue
          lines.splice(i, 1)
          edited = true
        }
      },
      isEmptyObject: () => false,
      // Its lines: a newline at the end means nothing to dotenv.
      value: () => lines,
      text: () => (lines.length === 0 ? '' : lines.join(eol) + (trailing || original === '' || edited ? eol : '')),
    }
  },
}
