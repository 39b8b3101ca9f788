import { type ConfigDoc, type FileFormat, type KeyPath, MalformedError, eolOf } from './types'

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/
const LINE = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)(.*)$/

function unquote(raw: string): string {
  const v = raw.trim()
  const m = /^(['"`])(.*)\1(\s+#.*)?$/.exec(v)
  if (m) return m[1] === '"' ? m[2].replace(/\\n/g, '\n') : m[2]
  return v.replace(/\s+#.*$/, '')
}

/** A value's trailing comment (` # …` after the value, outside its quotes), or ''. */
function commentOf(raw: string): string {
  return /^(?:(['"`]).*\1|[^#]*?)(\s+#.*)$/.exec(raw)?.[2] ?? ''
}

function quote(v: string): string {
  return /^[A-Za-z0-9_./:@%+,-]*$/.test(v) ? v : `"${v.replace(/(["\\])/g, '\\$1')}"`
}

/**
 * A dotenv file (Gemini CLI's `~/.gemini/.env`), edited line by line: only the `NAME=value` line
 * of the variable Burnrate owns is replaced, added at the end, or removed; every other line stays
 * as it was. No npm library edits dotenv files in place, and the format is one assignment a line.
 */
export const dotenvFormat: FileFormat = {
  open(original: string): ConfigDoc {
    const eol = eolOf(original)
    const lines = original === '' ? [] : original.split(/\r?\n/)
    const trailing = lines.length > 0 && lines[lines.length - 1] === ''
    if (trailing) lines.pop()
    lines.forEach((line, i) => {
      if (line.trim() === '' || line.trim().startsWith('#')) return
      if (!LINE.test(line)) throw new MalformedError(`not a dotenv file: line ${i + 1} is not NAME=value`)
    })
    const key = (path: KeyPath) => {
      if (path.length !== 1 || !NAME.test(path[0])) throw new Error(`dotenv: bad variable name ${path.join('.')}`)
      return path[0]
    }
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
        for (let i = lines.length - 1; i >= 0; i--) if (LINE.exec(lines[i])?.[2] === name) lines.splice(i, 1)
      },
      isEmptyObject: () => false,
      value() {
        return this.text()
      },
      text: () => (lines.length === 0 ? '' : lines.join(eol) + (trailing || original === '' ? eol : '')),
    }
  },
}
