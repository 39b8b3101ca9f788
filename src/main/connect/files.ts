import { isUtf8 } from 'node:buffer'
import { closeSync, constants, existsSync, fchmodSync, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/**
 * The file's text, or null when it does not exist (other errors are thrown). A file that is not
 * UTF-8 (a profile saved in Latin-1) throws ENOTUTF8: read as UTF-8, its other bytes would become
 * U+FFFD, and be written so to the file and its backup, lost for good.
 */
export function readText(path: string): string | null {
  const bytes = readBytes(path)
  if (bytes === null) return null
  if (!isUtf8(bytes)) throw Object.assign(new Error(`${path} is not UTF-8 text`), { code: 'ENOTUTF8' })
  return bytes.toString('utf8')
}

/**
 * The bytes of the regular file at `path` (behind its symlinks). Anything else is refused without
 * waiting on it: a named pipe (a secrets manager's mounted .env, such as 1Password's) blocks a
 * read until something writes into it, and the agents' files are read on the main thread, where
 * the proxy runs: the app, the server and `burnrate connect` would hang, every agent's calls with them.
 * Nor is such a file opened: its writer waits for a reader's open, and takes it for a read to
 * deliver to (1Password asks the user to authorize each), so it is looked at first; the open,
 * which does not wait, and its check are for one put there in between.
 */
function readRegular(path: string): Buffer {
  if (!statSync(path).isFile()) throw notRegular()
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
  try {
    if (!fstatSync(fd).isFile()) throw notRegular()
    return readFileSync(fd)
  } finally {
    closeSync(fd)
  }
}

const notRegular = (): Error => new Error('it is not a regular file: a named pipe or a device is not read')

/** The file's bytes (behind its symlinks), or null when it does not exist; as readRegular, never waiting on what is not a file. */
export function readBytes(path: string): Buffer | null {
  try {
    return readRegular(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * readText, but a file that is not UTF-8 is read byte for byte (`latin1`: one character a byte),
 * which writeFileKeepingMode(…, 'latin1') writes back byte for byte: Disconnect takes Burnrate's
 * own (ASCII) lines out of such a file without losing the user's bytes, rather than refusing and
 * leaving the agent pointed at a Burnrate that may be gone.
 */
export function readTextOrBytes(path: string): { text: string; latin1: boolean } | null {
  let text: string | null
  try {
    text = readText(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOTUTF8') throw err
    return { text: readRegular(path).toString('latin1'), latin1: true }
  }
  return text === null ? null : { text, latin1: false }
}

/**
 * The file `path` stands for: the end of its symlinks even when that does not exist yet (a dotfile
 * manager's link made before its target), so a write goes there and the link stays a link.
 * A link another user made in a sticky folder anyone may write (/tmp) is not followed, as the
 * kernel's protected_symlinks does not follow it: they could point `export -o /tmp/calls.csv` at
 * any file of this user's (the link is read here, so the kernel's rule would not apply).
 */
export function realTarget(path: string): string {
  guardLink(path)
  try {
    return realpathSync(path)
  } catch {}
  let p = path
  // A bound, for a link loop.
  for (let i = 0; i < 40; i++) {
    try {
      if (!lstatSync(p).isSymbolicLink()) return p
    } catch {
      return p
    }
    guardLink(p)
    p = resolve(dirname(p), readlinkSync(p))
  }
  return p
}

/** Throws when `path` is a symlink the kernel would not follow for this user (protected_symlinks). */
function guardLink(path: string): void {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return
  let link
  try {
    link = lstatSync(path)
  } catch {
    return
  }
  if (!link.isSymbolicLink() || link.uid === process.getuid()) return
  const dir = statSync(dirname(resolve(path)))
  const stickyShared = (dir.mode & 0o1000) !== 0 && (dir.mode & 0o002) !== 0
  if (stickyShared && link.uid !== dir.uid) {
    throw Object.assign(new Error(`${path} is a link another user (uid ${link.uid}) made in a folder anyone may write; not followed`), { code: 'ELINKOWNER' })
  }
}

/**
 * Why `path` must not be written, or null. A file whose owner may not write it was made
 * read-only on purpose (root could still write it, and CI runs as root), so it is refused by
 * its mode, not by a failed write.
 */
export function checkWritable(path: string): string | null {
  const target = realTarget(path)
  if (existsSync(target)) {
    const st = statSync(target)
    if (!st.isFile()) return 'is not a regular file'
    if ((st.mode & 0o200) === 0) return 'is read-only'
    // Another name for the same file (a dotfile manager's hard link): a file is written whole or
    // not at all by replacing it, which would leave the other name with the old text, and
    // rewriting it in place could leave it cut short by a crash.
    if (st.nlink > 1) return `has ${st.nlink - 1} other hard link${st.nlink > 2 ? 's' : ''} (another name for the same file, as some dotfile managers make): Burnrate writes a file whole by replacing it, which would leave the other name with the old text; make this one a symlink to the file you keep (ln -sf), or a file of its own, and try again`
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
 * file and its new folders are the user's only: they may hold API keys (~/.gemini/.env). Returns
 * the folders it made, outermost first (removeEmptyFolders takes them away again).
 */
export function writeFileKeepingMode(path: string, text: string | Buffer, encoding: 'utf8' | 'latin1' = 'utf8', beforeRename?: () => void): string[] {
  const target = realTarget(path)
  let mode = 0o600
  let made: string[] = []
  try {
    mode = statSync(target).mode & 0o777
  } catch {
    made = makeFolders(dirname(target))
  }
  writeDurably(target, text, mode, encoding, beforeRename)
  return made
}

/** Makes `dir` and the folders above it that are missing, private to the user, durably; returns those it made, outermost first. */
export function makeFolders(dir: string): string[] {
  const made: string[] = []
  for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) made.unshift(d)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  for (const d of made) syncFolder(dirname(d))
  return made
}

/** The folders writeFileKeepingMode(path) would make for the file, outermost first. */
export function missingFolders(path: string): string[] {
  const target = realTarget(path)
  if (existsSync(target)) return []
  const made: string[] = []
  for (let d = dirname(target); !existsSync(d) && dirname(d) !== d; d = dirname(d)) made.unshift(d)
  return made
}

/** The temporary file writeDurably(target) writes first: a crash may leave it (./recover.ts removes it). */
export const tempName = (target: string, pid = process.pid): string => `${target}.burnrate-${pid}.tmp`

/**
 * Replaces `target` all at once, durably: the text goes to a temporary file in the same folder,
 * which is synced to the disk before it is renamed over `target`, and the folder is synced after,
 * so a crash or a power cut leaves the old file or the new one, never a part of it. A file with
 * other hard links is not replaced (checkWritable refuses it first): the rename would leave the
 * other names with the old text. `beforeRename` runs once the new text is on the disk, right before
 * it replaces `target` (what it throws stops the write, `target` untouched).
 */
export function writeDurably(target: string, text: string | Buffer, mode: number, encoding: 'utf8' | 'latin1' = 'utf8', beforeRename?: () => void): void {
  const tmp = tempName(target)
  try {
    // Made new ('wx'), never opened through what is already there: its name is predictable, and in
    // a folder other users may write (a shared data folder) a link planted under it would have the
    // text written over the file it points to. A leftover of a crash (or such a link) is removed
    // first; anything put there meanwhile makes the write fail rather than follow it.
    rmSync(tmp, { force: true })
    const fd = openSync(tmp, 'wx', mode)
    try {
      fchmodSync(fd, mode)
      writeFileSync(fd, text, { encoding })
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    beforeRename?.()
    renameSync(tmp, target)
  } catch (err) {
    rmSync(tmp, { force: true })
    throw err
  }
  syncFolder(dirname(target))
}

/** Makes a rename or a removal in `dir` durable. Windows cannot open a folder to sync it; NTFS journals it. */
export function syncFolder(dir: string): void {
  if (process.platform === 'win32') return
  let fd: number
  try {
    fd = openSync(dir, 'r')
  } catch (err) {
    // Gone with what was in it: nothing there to make durable.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Removes the file (behind a symlink, the file it points to: the link stays as it was). */
export function removeFile(path: string): void {
  const target = realTarget(path)
  rmSync(target, { force: true })
  syncFolder(dirname(target))
}

/**
 * Removes the folders Burnrate made (outermost first, as writeFileKeepingMode gives them), innermost
 * first, each only while it is empty: an agent's config folder left behind would make the agent
 * look installed. A folder someone put something in since stays, and so do the ones around it.
 */
export function removeEmptyFolders(folders: readonly string[]): void {
  for (const dir of [...folders].reverse()) {
    try {
      rmdirSync(dir)
      syncFolder(dirname(dir))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return
    }
  }
}
