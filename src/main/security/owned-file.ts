import { lstatSync, statSync } from 'node:fs'

/**
 * Why a file in the data folder is not to be trusted, or null when it is: it belongs to another
 * user (nor root), or anyone may write it, or it is a link another user made. A data folder this
 * user does not own (a shared folder) can hold files other users planted: a `config.yaml` would
 * send every API key to their listener, a spill file would put forged calls in the ledger.
 * Group-writable files are fine (a user's own group, as umask 002 makes them). Windows: null.
 */
export function untrustedReason(path: string): string | null {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return null
  const me = process.getuid()
  const ours = (uid: number) => uid === me || uid === 0
  const link = lstatSync(path)
  if (link.isSymbolicLink() && !ours(link.uid)) return `it is a link made by another user (uid ${link.uid})`
  const st = link.isSymbolicLink() ? statSync(path) : link
  if (!ours(st.uid)) return `it belongs to another user (uid ${st.uid})`
  if (st.mode & 0o002) return 'any user may write it'
  return null
}

/** `untrustedReason`, for a file that may be gone or unreadable meanwhile: null then (what reads it next says why). */
export function untrustedIfThere(path: string): string | null {
  try {
    return untrustedReason(path)
  } catch {
    return null
  }
}
