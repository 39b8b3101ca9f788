import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
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
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, text, { mode: 0o600 })
  // A leftover temporary file from a crash keeps its old mode when rewritten.
  if (process.platform !== 'win32') chmodSync(tmp, 0o600)
  renameSync(tmp, path)
}

export function writeJsonFile(path: string, data: unknown): void {
  writeTextFile(path, JSON.stringify(data, null, 2) + '\n')
}
