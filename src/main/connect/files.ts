import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** The file's text, or null when it does not exist (other errors are thrown). */
export function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * Why `path` must not be written, or null. A file whose owner may not write it was made
 * read-only on purpose (root could still write it, and CI runs as root), so it is refused by
 * its mode, not by a failed write.
 */
export function checkWritable(path: string): string | null {
  let target = path
  try {
    target = realpathSync(path)
  } catch {}
  if (existsSync(target)) {
    const st = statSync(target)
    if (!st.isFile()) return 'is not a regular file'
    if ((st.mode & 0o200) === 0) return 'is read-only'
    return null
  }
  let dir = dirname(target)
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir)
  const st = statSync(dir)
  if (!st.isDirectory()) return `cannot be created (${dir} is not a folder)`
  if ((st.mode & 0o200) === 0) return `cannot be created (${dir} is read-only)`
  return null
}

/**
 * Writes through a temporary file in the same folder and a rename (a crash never leaves half a
 * config), onto the real file when `path` is a symlink (dotfile managers), keeping its mode. A new
 * file and its new folders are the user's only: they may hold API keys (~/.gemini/.env).
 */
export function writeFileKeepingMode(path: string, text: string): void {
  let target = path
  try {
    target = realpathSync(path)
  } catch {}
  let mode = 0o600
  try {
    mode = statSync(target).mode & 0o777
  } catch {
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
  }
  const tmp = `${target}.burnrate-${process.pid}.tmp`
  try {
    writeFileSync(tmp, text, { mode })
    chmodSync(tmp, mode)
    renameSync(tmp, target)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  }
}

export function removeFile(path: string): void {
  rmSync(path, { force: true })
}
