/** A key inside a config file: object keys from the top (`['env', 'ANTHROPIC_BASE_URL']`). */
export type KeyPath = readonly string[]

/**
 * One config file opened for editing. Every edit changes only the text of the key it names:
 * comments, order, indentation and every other key stay byte for byte as they were.
 */
export interface ConfigDoc {
  /** The value at `path`, or undefined when it is absent. */
  get(path: KeyPath): unknown
  set(path: KeyPath, value: unknown): void
  /** Removes the key; removing an absent key does nothing. */
  delete(path: KeyPath): void
  /** Whether the object at `path` exists and has no keys (containers Burnrate created are removed when emptied). */
  isEmptyObject(path: KeyPath): boolean
  /** What the file means (its parsed value; for line formats, the text), to compare two edits of it. */
  value(): unknown
  text(): string
}

/** The syntax of a file, as a plan reads it to hint its secrets (../redact-file.ts): JSON and TOML by their structure, the others line by line. */
export type FileKind = 'json' | 'toml' | 'dotenv' | 'shell'

export interface FileFormat {
  kind: FileKind
  /** Opens `text` ('' for a file that does not exist yet); throws MalformedError when it does not parse. */
  open(text: string): ConfigDoc
}

/** The file is not valid in its format: nothing is written to it. */
export class MalformedError extends Error {
  override name = 'MalformedError'
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date)
}

/** Walks plain objects along `path`. */
export function walk(root: unknown, path: KeyPath): unknown {
  let cur = root
  for (const k of path) {
    if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, k)) return undefined
    cur = cur[k]
  }
  return cur
}

/** The line ending a file already uses (CRLF when most of its lines end so). */
export function eolOf(text: string): '\n' | '\r\n' {
  const crlf = (text.match(/\r\n/g) ?? []).length
  const lf = (text.match(/\n/g) ?? []).length
  return crlf > 0 && crlf * 2 >= lf ? '\r\n' : '\n'
}

/**
 * `text` as Burnrate writes a file it edited: ending with a line ending (the file's own), also
 * when it had none. The last line may be Burnrate's (a TOML or dotenv key added at the end), and a
 * line appended later (`echo 'model = "o3"' >> ~/.codex/config.toml`, an installer's line in a
 * profile) would be joined onto it, breaking the file. A final newline changes nothing these
 * formats mean; Disconnect puts back the file's own bytes, its missing newline included.
 */
export function endingLine(text: string, eol: string): string {
  return text === '' || text.endsWith('\n') ? text : text + eol
}
