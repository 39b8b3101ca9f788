import { readdir } from 'node:fs/promises'
import { join } from 'node:path'

/** Whether `err` is the file system's (EACCES, EIO...), not a fault of the code reading. */
export function fsError(err: unknown): err is NodeJS.ErrnoException {
  const code = (err as NodeJS.ErrnoException | null)?.code
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)
}

/** A file or folder that went between being listed and being read: nothing to read, nothing to say. */
export const vanished = (err: unknown): boolean => fsError(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR')

/**
 * Every entry below `root`, relative to it, as `readdir(root, { recursive: true })` lists them
 * (folders too; links to folders not followed), but a subfolder that cannot be read (one `sudo`
 * left owned by root) is passed to `unreadable` and left out, rather than failing the whole
 * listing and with it every other log. `root` itself absent or unreadable throws.
 */
export async function listFiles(root: string, unreadable: (path: string) => void): Promise<string[]> {
  const out: string[] = []
  const walk = async (rel: string): Promise<void> => {
    let entries
    try {
      entries = await readdir(rel ? join(root, rel) : root, { withFileTypes: true })
    } catch (err) {
      if (rel === '' || !fsError(err)) throw err
      if (!vanished(err)) unreadable(join(root, rel))
      return
    }
    for (const e of entries) {
      const name = rel ? join(rel, e.name) : e.name
      out.push(name)
      if (e.isDirectory()) await walk(name)
    }
  }
  await walk('')
  return out
}

/** '2 of claude-code's logs could not be read (no permission, or in use?): <paths>', the first few named. */
export function unreadableNote(s: { agent: string; unreadable: readonly string[] }): string {
  const shown = s.unreadable.slice(0, 3).join(', ') + (s.unreadable.length > 3 ? `, and ${s.unreadable.length - 3} more` : '')
  return `${s.unreadable.length} of ${s.agent}'s logs could not be read (no permission, or in use?): ${shown}`
}
