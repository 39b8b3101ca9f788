import { isDeepStrictEqual } from 'node:util'
import { parse, patch } from '@decimalturn/toml-patch'
import { diffArrays } from 'diff'
import { type ConfigDoc, type FileFormat, MalformedError, endingLine, eolOf, isPlainObject, walk } from './types'

/**
 * toml-patch's `Error parsing TOML (5, 1):\n<the line>\n^\n<reason>` as `<reason> at line 5,
 * column 1`, as the JSON format says it: the reason is its last line, the first has only where.
 * The file's own text is never repeated (see withoutFileText).
 */
function tomlReason(err: unknown): string {
  const message = (err as Error)?.message ?? String(err)
  const where = /^Error parsing TOML \((\d+), (\d+)\):\n/.exec(message)
  if (!where) return withoutFileText(message.replace(/\s*\n\s*/g, ' '))
  const reason = message.trimEnd().split('\n').pop()!
  return `${withoutFileText(reason)} at line ${where[1]}, column ${where[2]}`
}

/**
 * The parser's reason without the text of the file it quotes: `Invalid float "sk-proj-…"` is
 * what a key written without quotes (Codex's `experimental_bearer_token = sk-…`) gives, and the
 * reason goes to the admin API's answer, the Connect panel, the CLI and the desktop app's log.
 * Quoted text with a letter or digit in it is left out (`"]]"`, what the parser expected, stays),
 * and so is what it `found`. The line and column say where to look.
 */
function withoutFileText(reason: string): string {
  return reason.replace(/,? found .*$/s, '').replace(/"[^"\n]*[A-Za-z0-9][^"\n]*"/g, '"…"')
}

/**
 * TOML (Codex CLI's config.toml), edited with @decimalturn/toml-patch: the file is parsed to an
 * object, the object is changed, and `patch` rewrites only what differs, keeping comments,
 * whitespace, key order and the style of every table it does not touch.
 */
export const tomlFormat: FileFormat = {
  kind: 'toml',
  open(original: string): ConfigDoc {
    let text = original
    const read = (t: string): Record<string, unknown> => {
      try {
        return parse(t) as Record<string, unknown>
      } catch (err) {
        throw new MalformedError(`not valid TOML: ${tomlReason(err)}`)
      }
    }
    let value = read(text)
    const parsed = (t: string): Record<string, unknown> | undefined => {
      try {
        return read(t)
      } catch {
        return undefined
      }
    }
    const apply = (change: (root: Record<string, unknown>) => void) => {
      // A fresh parse is the object patch() compares against; changing it leaves `value` intact until the new text parses.
      const next = read(text)
      change(next)
      text = endingLine(patch(text, next), eolOf(original))
      value = read(text)
    }
    return {
      get: (path) => walk(value, path),
      set: (path, v) =>
        apply((root) => {
          let cur: Record<string, unknown> = root
          for (const k of path.slice(0, -1)) {
            if (!isPlainObject(cur[k])) cur[k] = {}
            cur = cur[k] as Record<string, unknown>
          }
          cur[path[path.length - 1]] = v
        }),
      delete: (path) => {
        if (walk(value, path) === undefined) return
        const was = text
        apply((root) => {
          const parent = walk(root, path.slice(0, -1))
          if (isPlainObject(parent)) delete parent[path[path.length - 1]]
        })
        // toml-patch takes the comment lines above a key with it: the user's (one they wrote above
        // Burnrate's key, or above the table Burnrate's key went before) are put back.
        // What does not parse (a comment put back where it cannot be) does not mean the same: the
        // key is taken out all the same, as the editor took it.
        const kept = withCommentsOf(was, text)
        if (kept !== text && isDeepStrictEqual(parsed(kept), value)) {
          text = kept
          value = read(text)
        }
      },
      isEmptyObject: (path) => {
        const v = walk(value, path)
        return isPlainObject(v) && Object.keys(v).length === 0
      },
      value: () => value,
      text: () => text,
    }
  },
}

/**
 * `after` (`before` with a key taken out) with the whole-line comments `before` had that `after`
 * lost, where they were, and the blank lines around them there (the key's own lines stay out).
 * `before`'s last line is compared ended, as `after` ends it (endingLine): a comment ending a file
 * without a newline is the same line there, not one lost and put back before itself. So is a line
 * ended otherwise than `after` ends it (toml-patch ends every line of a file with mixed line
 * endings alike: a comment appended from PowerShell, CRLF, in an LF file), as `after` ends it. A
 * byte order mark (a file saved by Notepad) is no part of the first line, whose comment is one: it
 * stays where `after` has it, at the start.
 */
function withCommentsOf(before: string, after: string): string {
  const bom = (t: string): string => (t.startsWith('\uFEFF') ? '\uFEFF' : '')
  let out = bom(after)
  const was = before.slice(bom(before).length)
  // Line by line, a line the same whatever ends it (the common ones as `after` has them).
  const lines = (t: string): string[] => t.split(/(?<=\n)/).filter((line) => line !== '')
  const sameLine = (a: string, b: string): boolean => a.replace(/\r?\n$/, '') === b.replace(/\r?\n$/, '')
  const comment = (line: string): boolean => /^[ \t]*#/.test(line)
  for (const part of diffArrays(lines(endingLine(was, after.endsWith('\r\n') ? '\r\n' : '\n')), lines(after.slice(out.length)), { comparator: sameLine })) {
    if (!part.removed) out += part.value.join('')
    else if (part.value.some(comment)) out += part.value.filter((line) => comment(line) || line.trim() === '').join('')
  }
  return out
}
