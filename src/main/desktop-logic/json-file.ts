import { randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** A small JSON state file (window bounds, notices already shown): missing or corrupt reads as null. */
export function readJsonFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

/**
 * Writes through a temporary file and a rename, so a crash never leaves half a file. The file
 * is private to the user (0600), as the data folder is: notices name budget rules and agents.
 */
export function writeTextFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  // Made new ('wx'), never opened through what is there: a link planted under the name would
  // have the text written over the file it points to. A random name, so no leftover of a crash
  // (nor such a link) is in the way.
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`
  try {
    const fd = openSync(tmp, 'wx', 0o600)
    try {
      writeFileSync(fd, text)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, path)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  }
}

export function writeJsonFile(path: string, data: unknown): void {
  writeTextFile(path, JSON.stringify(data, null, 2) + '\n')
}
