import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** A small JSON state file (window bounds, notices already shown): missing or corrupt reads as null. */
export function readJsonFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

/** Writes through a temporary file and a rename, so a crash never leaves half a file. */
export function writeTextFile(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, text)
  renameSync(tmp, path)
}

export function writeJsonFile(path: string, data: unknown): void {
  writeTextFile(path, JSON.stringify(data, null, 2) + '\n')
}
