import * as jsonc from 'jsonc-parser'
import { type ConfigDoc, type FileFormat, type KeyPath, MalformedError, endingLine, eolOf, isPlainObject, walk } from './types'

/** The indentation a JSON file already uses: tabs, or the first indented line's spaces (2 when none). */
function indentOf(text: string): { insertSpaces: boolean; tabSize: number } {
  const m = /^([ \t]+)\S/m.exec(text)
  if (!m) return { insertSpaces: true, tabSize: 2 }
  if (m[1].startsWith('\t')) return { insertSpaces: false, tabSize: 1 }
  return { insertSpaces: true, tabSize: m[1].length }
}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset)
  const line = before.split('\n').length
  const col = offset - before.lastIndexOf('\n')
  return `line ${line}, column ${col}`
}

/**
 * A key an object holds twice: the agent reads the last (JSON.parse), while an edit would go into
 * the first, so Burnrate would say "connected" and the agent would not be. Refused instead.
 */
function duplicateKey(text: string): string | null {
  const root = jsonc.parseTree(text, [], { allowTrailingComma: true, disallowComments: false })
  const seen: jsonc.Node[] = root ? [root] : []
  while (seen.length > 0) {
    const node = seen.pop()!
    if (node.type === 'object') {
      const names = new Set<string>()
      for (const prop of node.children ?? []) {
        const name = prop.children?.[0]?.value as string | undefined
        if (name === undefined) continue
        if (names.has(name)) return `ambiguous: the key ${JSON.stringify(name)} is in one object twice (${lineCol(text, prop.offset)}); the agent reads the last one, an edit would go into the first, so remove one`
        names.add(name)
      }
    }
    for (const child of node.children ?? []) seen.push(child)
  }
  return null
}

/**
 * JSON and JSON with comments (Claude Code's settings.json, opencode.json[c], Gemini CLI's
 * settings.json), edited with jsonc-parser's modify/applyEdits: only the edited property's text
 * changes, in the file's own indentation and line endings.
 */
export const jsonFormat: FileFormat = {
  kind: 'json',
  open(withBom: string): ConfigDoc {
    // A byte order mark (Windows PowerShell 5.1 writes one) is not JSON, but Claude Code reads past
    // it: it is set aside for the edit and put back.
    const bom = withBom.startsWith('\uFEFF') ? '\uFEFF' : ''
    const original = withBom.slice(bom.length)
    let text = original
    const parse = (t: string) => {
      const errors: jsonc.ParseError[] = []
      const value = jsonc.parse(t, errors, { allowTrailingComma: true, disallowComments: false })
      if (errors.length) {
        const e = errors[0]
        throw new MalformedError(`not valid JSON: ${jsonc.printParseErrorCode(e.error)} at ${lineCol(t, e.offset)}`)
      }
      return value as unknown
    }
    let value = text.trim() === '' ? {} : parse(text)
    if (!isPlainObject(value)) throw new MalformedError('not a JSON object at the top level')
    const twice = duplicateKey(text)
    if (twice) throw new MalformedError(twice)
    // A file on one line (minified) stays on one line: formatting an edit formats the whole lines it
    // touches, which there is the whole file. A new or empty file, or one holding only `{}`, has no
    // layout of its own to keep: it is written as Claude Code writes its settings (2 spaces).
    const minified = !text.trim().includes('\n') && Object.keys(value).length > 0
    const options = (): jsonc.ModificationOptions => (minified ? {} : { formattingOptions: { ...indentOf(text), eol: eolOf(text) } })
    const edit = (path: KeyPath, v: unknown) => {
      if (text.trim() === '') text = '{}' + (original.endsWith('\n') || original === '' ? '\n' : '')
      text = endingLine(jsonc.applyEdits(text, jsonc.modify(text, [...path], v, options())), eolOf(text))
      value = parse(text)
    }
    return {
      get: (path) => walk(value, path),
      set: (path, v) => edit(path, v),
      delete: (path) => {
        if (walk(value, path) !== undefined) edit(path, undefined)
      },
      isEmptyObject: (path) => {
        const v = walk(value, path)
        return isPlainObject(v) && Object.keys(v).length === 0
      },
      value: () => value,
      text: () => bom + text,
    }
  },
}
